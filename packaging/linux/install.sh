#!/bin/sh
# Put Mnemo in your application menu and on your PATH, for you alone (no root needed).
# Run it from the unpacked folder: ./install.sh    To undo: ./install.sh --uninstall
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${XDG_DATA_HOME:-$HOME/.local/share}
bin=$HOME/.local/bin
target=$HOME/.local/lib/mnemo

if [ "${1:-}" = "--uninstall" ]; then
    rm -rf "$target" "$bin/mnemo" "$data/applications/mnemo.desktop" \
        "$data/icons/hicolor/256x256/apps/mnemo.png" "$data/icons/hicolor/scalable/apps/mnemo.svg"
    echo "Mnemo is uninstalled. Your memory is kept in $data/mnemo (delete that folder to remove it too)."
    exit 0
fi

mkdir -p "$HOME/.local/lib" "$bin" "$data/applications" "$data/icons/hicolor/256x256/apps" \
    "$data/icons/hicolor/scalable/apps"
rm -rf "$target.new"
cp -a "$here/mnemo" "$target.new"
rm -rf "$target"
mv "$target.new" "$target"
ln -sf "$target/mnemo" "$bin/mnemo"
cp "$here/mnemo.png" "$data/icons/hicolor/256x256/apps/mnemo.png"
cp "$here/mnemo.svg" "$data/icons/hicolor/scalable/apps/mnemo.svg"
sed "s|^Exec=mnemo|Exec=$target/mnemo|" "$here/mnemo.desktop" > "$data/applications/mnemo.desktop"
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database "$data/applications" || true
echo "Mnemo is installed: find it in your application menu, or run $bin/mnemo."
