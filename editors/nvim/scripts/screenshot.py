"""Capture Neovim's screen with the Cortex plugin — a hover over a code lens — as a PNG.

Neovim runs in a pseudo-terminal, its output is interpreted by pyte (a terminal emulator in
Python) and the screen's cells are drawn with Pillow: a real capture of what a terminal shows, no
mock-up. Needs `pip install pyte pillow` (not project dependencies: run on demand).

    python editors/nvim/scripts/screenshot.py REPO FILE LINE [-o shot.png] [--nvim nvim]

REPO must be indexed already (`cortex index` in it). LINE (1-based) should be a definition.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time
from pathlib import Path

import pyte
from PIL import Image, ImageDraw, ImageFont

COLS, ROWS = 132, 38
PLUGIN = Path(__file__).resolve().parent.parent
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
INIT = """
vim.opt.runtimepath:prepend(os.getenv("CORTEX_PLUGIN"))
vim.o.termguicolors = true
vim.o.number = true
vim.o.laststatus = 0
vim.o.cmdheight = 1
require("cortex").setup({ cmd = { os.getenv("CORTEX_PYTHON"), "-m", "cortex_ls" },
                          settings = { hotspotThreshold = 3, hotspotWindowDays = 3650,
                                       historyLength = 5, commitLinks = false } })
vim.api.nvim_create_autocmd("User", { pattern = "CortexIndexUpdated",
                                      callback = function() vim.cmd("echo 'cortex: indexed'") end })
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("file")
    parser.add_argument("line", type=int)
    parser.add_argument("-o", "--output", type=Path, default=Path("nvim-hover.png"))
    parser.add_argument("--nvim", default="nvim")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    init = args.output.resolve().with_suffix(".init.lua")
    init.write_text(INIT, encoding="utf-8")
    screen = pyte.Screen(COLS, ROWS)
    stream = pyte.ByteStream(screen)
    env = dict(os.environ, TERM="xterm-256color", COLORTERM="truecolor",
               CORTEX_PLUGIN=str(PLUGIN), CORTEX_PYTHON=sys.executable, CORTEX_MODEL="none")
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(args.repo)
        os.execvpe(args.nvim, [args.nvim, "--clean", "-u", str(init), f"+{args.line}",
                               args.file], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    try:
        read_until(fd, stream, screen, lambda text: "cortex: indexed" in text, args.timeout,
                   "the index run")
        read_until(fd, stream, screen, lambda text: "changed" in text, args.timeout,
                   "the code lens")
        # Put the cursor on the name (w skips `def`), then the hover (K).
        os.write(fd, b"^ww")
        time.sleep(0.3)   # let the cursor land; the hover below is waited for on the screen
        os.write(fd, b"K")
        read_until(fd, stream, screen, lambda text: "changes ·" in text or "change ·" in text,
                   args.timeout, "the hover")
        render(screen, args.output)
        print(f"wrote {args.output}")
    finally:
        os.write(fd, b"\x1b:qa!\r")
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        init.unlink(missing_ok=True)
    return 0


def read_until(fd: int, stream, screen, done, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                stream.feed(os.read(fd, 65536))
            except OSError:
                break
        if done("\n".join(screen.display)):
            # Drain what follows the change (the rest of a redraw) before capturing.
            end = time.monotonic() + 0.5
            while time.monotonic() < end:
                if select.select([fd], [], [], 0.1)[0]:
                    stream.feed(os.read(fd, 65536))
            return
    raise SystemExit(f"timed out waiting for {what}:\n" + "\n".join(screen.display))


def _color(value: str, default: tuple[int, int, int]) -> tuple[int, int, int]:
    if value == "default":
        return default
    if len(value) == 6:
        try:
            return tuple(int(value[i:i + 2], 16) for i in (0, 2, 4))
        except ValueError:
            return default
    names = {"black": (0, 0, 0), "red": (205, 49, 49), "green": (13, 188, 121),
             "brown": (229, 229, 16), "blue": (36, 114, 200), "magenta": (188, 63, 188),
             "cyan": (17, 168, 205), "white": (229, 229, 229)}
    return names.get(value, default)


def render(screen, output: Path) -> None:
    font = ImageFont.truetype(FONT, 15)
    left, top, right, bottom = font.getbbox("M")
    cw, ch = right, 20
    bg_default, fg_default = (30, 30, 30), (212, 212, 212)
    image = Image.new("RGB", (COLS * cw + 16, ROWS * ch + 16), bg_default)
    draw = ImageDraw.Draw(image)
    for y in range(ROWS):
        row = screen.buffer[y]
        for x in range(COLS):
            cell = row[x]
            fg, bg = _color(cell.fg, fg_default), _color(cell.bg, bg_default)
            if cell.reverse:
                fg, bg = bg, fg
            px, py = 8 + x * cw, 8 + y * ch
            if bg != bg_default:
                draw.rectangle([px, py, px + cw - 1, py + ch - 1], fill=bg)
            if cell.data.strip():
                draw.text((px, py + 2), cell.data, font=font, fill=fg)
    image.save(output)


if __name__ == "__main__":
    sys.exit(main())
