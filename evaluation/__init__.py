"""How longdoc's reading is scored against ground truth (CER, reading order,
olmOCR-format tests, tables): used by the tests and ``bench/``, not shipped
in the ``longdoc`` package."""
