#!/usr/bin/env bash
# Smoke test of a built Mnemo: packaging/smoke.sh PATH [SCREENSHOT.png]
#
# PATH is what a user downloads (dist/mnemo-*.tar.gz or dist/mnemo_*.deb) or the dist/mnemo folder.
# Everything runs under `env -i` with an empty HOME, PATH=/usr/bin:/bin (no venv, no uv) and no
# network settings:
#   1. `mnemo --version`
#   2. `mnemo chat -m hello` with the bundled model
#   3. `mnemo ingest` of a small folder, then a search that finds it
#   4. `mnemo serve` on 127.0.0.1: an assistant created with a token, a request without one refused
#   5. the window on a virtual screen (Xvfb) for 15 s, with a screenshot, and a check that every
#      shared library it loaded came from the bundle or the system, none from a Python install.
# It fails on any traceback, missing library or Qt plugin error. Needs Xvfb (Debian: xvfb).
set -euo pipefail
artefact=$(realpath "$1")
shot=$(realpath -m "${2:-smoke-window.png}")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'kill "${xvfb:-}" "${app:-}" "${server:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

case "$artefact" in
    *.tar.gz) tar -xzf "$artefact" -C "$work"; app_dir=$(echo "$work"/mnemo-*/mnemo) ;;
    *.deb) dpkg-deb -x "$artefact" "$work/root"; app_dir="$work/root/opt/mnemo" ;;
    *) app_dir="$artefact" ;;
esac
mnemo="$app_dir/mnemo"
[ -x "$mnemo" ] || { echo "FAIL: no mnemo executable in $artefact" >&2; exit 1; }
mkdir -p "$work/home" "$work/notes"

clean() {  # a clean environment: nothing from this shell, the developer's HOME or a venv
    env -i HOME="$work/home" PATH=/usr/bin:/bin LANG=C.UTF-8 "$@"
}

bad='Traceback \(most recent call last\)|cannot open shared object|ModuleNotFoundError|ImportError|qt\.qpa\.plugin|Could not load the Qt platform plugin|Qt platform plugin .* could not|undefined symbol|Illegal instruction|Segmentation fault'
check() {  # check NAME LOGFILE: no error text in what a step printed
    if grep -E -q "$bad" "$2"; then
        echo "FAIL: $1 printed an error:" >&2
        grep -E -m5 -B2 -A5 "$bad" "$2" >&2
        exit 1
    fi
}

step() { printf '%-10s' "$1"; }

if clean sh -c 'command -v uv' > /dev/null 2>&1; then
    echo "FAIL: uv is on the clean PATH; the test would not show that Mnemo needs none" >&2
    exit 1
fi

step version
clean "$mnemo" --version > "$work/version.log" 2>&1
check version "$work/version.log"
grep -E -q '^mnemo [0-9]' "$work/version.log" || { cat "$work/version.log"; exit 1; }
cat "$work/version.log"

step chat
start=$(date +%s.%N)
clean "$mnemo" chat -m hello > "$work/chat.log" 2>&1 || { cat "$work/chat.log"; exit 1; }
check chat "$work/chat.log"
[ -s "$work/chat.log" ] || { echo "FAIL: chat printed nothing" >&2; exit 1; }
seconds=$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $start }")
echo "replied in $seconds s: $(head -c 120 "$work/chat.log" | tr '\n' ' ')"

step ingest
printf 'The spare key to the shed hangs behind the blue door.\n' > "$work/notes/shed.txt"
printf '# Boiler\n\nThe boiler is serviced every October by Dana.\n' > "$work/notes/boiler.md"
clean "$mnemo" ingest "$work/notes" > "$work/ingest.log" 2>&1 || { cat "$work/ingest.log"; exit 1; }
check ingest "$work/ingest.log"
clean "$mnemo" search archival "who services the boiler" > "$work/search.log" 2>&1 ||
    { cat "$work/search.log"; exit 1; }
check search "$work/search.log"
grep -q "Dana" "$work/search.log" || { echo "FAIL: the ingested note was not found" >&2; cat "$work/search.log"; exit 1; }
echo "2 files ingested and found again"

step serve
token=$(clean "$mnemo" server-users --root "$work/server" add smoke 2> "$work/users.log" | tail -1)
check "server-users" "$work/users.log"
port=$((20000 + RANDOM % 20000))
# env itself, not `clean` (a function): $! must be the server, so that kill stops it.
env -i HOME="$work/home" PATH=/usr/bin:/bin LANG=C.UTF-8 "$mnemo" serve --root "$work/server" \
    --port "$port" > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do
    curl -s -o /dev/null "http://127.0.0.1:$port/openapi.json" && break
    sleep 0.2
done
status=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $token" \
    -H 'content-type: application/json' -d '{"name":"home"}' "http://127.0.0.1:$port/v1/assistants")
refused=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/assistants")
kill "$server"
wait "$server" 2>/dev/null || true
check serve "$work/serve.log"
[ "$status" = 201 ] && [ "$refused" = 401 ] ||
    { echo "FAIL: the server answered $status and $refused (expected 201 and 401)" >&2; cat "$work/serve.log"; exit 1; }
echo "created an assistant over HTTP; no token, 401"

step window
display=:$((90 + RANDOM % 100))
mkdir -p "$work/fb"
Xvfb "$display" -screen 0 1280x800x24 -fbdir "$work/fb" -nolisten tcp > "$work/xvfb.log" 2>&1 &
xvfb=$!
sleep 1
# env itself again: $! must be Mnemo's process, whose mapped libraries are read below.
env -i HOME="$work/home" PATH=/usr/bin:/bin LANG=C.UTF-8 DISPLAY="$display" "$mnemo" \
    > "$work/window.log" 2>&1 &
app=$!
sleep 15
kill -0 "$app" 2>/dev/null || { echo "FAIL: the window exited early" >&2; cat "$work/window.log"; exit 1; }
outside=$(awk '{print $6}' "/proc/$app/maps" | grep '\.so' | sort -u |
    grep -v -e "^$app_dir/" -e '^/usr/lib/' -e '^/lib/' -e '^/lib64/' -e '^/usr/lib64/' || true)
if [ -n "$outside" ]; then
    echo "FAIL: the window loaded libraries from outside its folder and the system:" >&2
    echo "$outside" >&2
    exit 1
fi
python3 "$here/xwd_to_png.py" "$work/fb/Xvfb_screen0" "$shot" > /dev/null
# A second start on the same profile brings this window forward and ends, opening nothing twice.
clean DISPLAY="$display" timeout 30 "$mnemo" > "$work/second.log" 2>&1 ||
    { echo "FAIL: a second start failed" >&2; cat "$work/second.log"; exit 1; }
check "second start" "$work/second.log"
kill -0 "$app" 2>/dev/null || { echo "FAIL: the first window ended on a second start" >&2; exit 1; }
kill "$app"
wait "$app" 2>/dev/null || true
check window "$work/window.log"
echo "ran 15 s, libraries only from the bundle and the system; a second start came forward"
echo "          screenshot: $shot"
echo "PASS: $artefact"
