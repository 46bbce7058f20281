"""Engine plugins for tests, in the manner of OCRmyPDF's test plugins: each
module registers engines that misbehave in one way, chosen through
``inference.plugins`` (``tests.plugins.misbehaving`` or this file's path)
and ``inference.engine`` by the real CLI and server."""
