"""longdoc inside other tools: each module plugs longdoc into one of them
and imports that tool itself, so importing longdoc never imports it.

- :mod:`longdoc.integrations.ocrmypdf`: longdoc as an OCRmyPDF engine
  (``ocrmypdf --plugin longdoc.integrations.ocrmypdf IN.pdf OUT.pdf``).
"""
