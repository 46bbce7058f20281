#!/usr/bin/env bash
# Debian packages the tests use: a CJK font for generated Chinese pages,
# Liberation and Carlito fonts for the scanned code tokens (tests/docgen/codes.py),
# Tesseract for the optional second engine, Chromium with its driver for
# the web console's browser tests, poppler's pdftotext to read the
# searchable PDF back as other tools do, and Ghostscript for OCRmyPDF's
# PDF/A (longdoc as an OCRmyPDF engine, tests/integrations). Installs only what is missing;
# without root (or apt) it says what to install and carries on: the tests
# that need them are then skipped with that reason.
set -uo pipefail
need=()
[ -f /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || need+=(fonts-wqy-microhei)
[ -f /usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf ] || need+=(fonts-liberation2)
[ -f /usr/share/fonts/truetype/crosextra/Carlito-Regular.ttf ] || need+=(fonts-crosextra-carlito)
[ -f /usr/share/fonts/truetype/freefont/FreeSerif.ttf ] || need+=(fonts-freefont-ttf)
command -v tesseract >/dev/null 2>&1 || need+=(tesseract-ocr tesseract-ocr-eng)
[ -n "$(ls /usr/share/tesseract-ocr/*/tessdata/chi_sim.traineddata 2>/dev/null)" ] || need+=(tesseract-ocr-chi-sim)
command -v pdftotext >/dev/null 2>&1 || need+=(poppler-utils)
command -v gs >/dev/null 2>&1 || need+=(ghostscript)
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian packages: ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null \
        || echo "warning: could not install ${need[*]}; dependent tests will be skipped" >&2
else
    echo "note: install ${need[*]} (Debian) to run every test; dependent tests will be skipped" >&2
fi
exit 0
