#!/bin/sh
# Regenerates docs/view-figure1.png, the README's picture of `ddbx view`: the
# Figure 1 example (examples/figure1) recorded once, its races listed, its
# HTML view written and photographed by headless Chromium (Debian's
# `chromium`; `apt-get install -y chromium` if it is missing).
#
#   docs/screenshot.sh            # from the repository's top directory
#
# DDBX=path/to/ddbx uses that binary instead of building target/debug/ddbx.
# The recording and the page are made in a temporary directory, removed at
# the end.  Each run records a new run of the example, so the picture can
# differ in which messages won the races, not in what it shows.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${DDBX:-}" ]; then
    cargo build -q -p ddbx
    DDBX=$root/target/debug/ddbx
fi
chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "screenshot.sh: $chromium not found (apt-get install -y chromium)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ddbx-screenshot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

make -s -C examples/figure1 OUT="$tmp/bin"
# The commands the README shows, on a fresh recording named run1.
cd "$tmp"
DDBX_JITTER=20 FIG1_BIN="$tmp/bin" "$DDBX" record -o run1 -- "$root/examples/figure1/run" >/dev/null 2>&1
"$DDBX" races run1 | tail -n 2
echo
"$DDBX" view run1 -o run1.html 2>/dev/null
cd "$root"

HOME="$tmp" "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$tmp/profile" \
    --window-size=1280,800 --screenshot="$tmp/shot.png" "file://$tmp/run1.html" \
    >/dev/null 2>&1
# Fewer colours keep the file small (the page is flat colours and text), when
# ImageMagick is there.
if convert "$tmp/shot.png" -colors 64 -strip "PNG8:$tmp/small.png" 2>/dev/null; then
    mv "$tmp/small.png" "$tmp/shot.png"
fi
cp "$tmp/shot.png" docs/view-figure1.png
echo "wrote docs/view-figure1.png ($(wc -c < docs/view-figure1.png) bytes)"
