"""Runtime helpers every room uses: helper processes (`procs`), the model worker pool (`pool`), background loops (`loop`) and capped child-process calls."""
