"""The one progress line on a terminal, rewritten in place at most every
:data:`REFRESH_SECONDS`: what it says comes from the caller (a function of
the seconds since it started), so parsing (:func:`parse_line`: sentences,
words, words per second, the share read and the time left) and a training
epoch (:func:`bar_line`: a bar, counts, time and estimate, loss) share its
clock, its timing and its one time format (:func:`clock`)."""
from __future__ import annotations

import sys
import time
from typing import IO, Callable

#: seconds between two refreshes of the line: often enough to watch, rarely enough to cost nothing
REFRESH_SECONDS = 0.25
#: back to the start of the line, and clear it
_REWRITE = "\r\x1b[K"


class Progress:
    """``update()`` after each piece of work, ``close()`` at the end, which
    clears the line, or with ``keep`` writes it a last time and ends it.
    ``line(seconds)``: the text to show.  Nothing is shown unless ``enabled``."""

    def __init__(self, line: Callable[[float], str], enabled: bool = True, *, keep: bool = False,
                 stream: IO[str] | None = None, interval: float = REFRESH_SECONDS):
        self.line, self.enabled, self.keep = line, enabled, keep
        self.stream = stream or sys.stderr
        self.interval = interval
        self.started = time.perf_counter()
        self.shown_at: float | None = None

    def update(self) -> None:
        """Rewrite the line, at most every ``interval`` seconds."""
        now = time.perf_counter()
        if not self.enabled or (self.shown_at is not None and now - self.shown_at < self.interval):
            return
        self.shown_at = now
        self._write(_REWRITE + self.line(now - self.started))

    def close(self) -> None:
        """End the line: keep it (``keep``) or clear it, so that what follows starts a clean one."""
        if self.enabled and self.keep:
            self._write(_REWRITE + self.line(time.perf_counter() - self.started) + "\n")
        elif self.shown_at is not None:
            self._write(_REWRITE)
        self.shown_at = None

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def parse_line(sentences: int, words: int, seconds: float, share: float | None) -> str:
    """``parsing: 1,200 sentences, 15,000 words, 21,000 words/s, 37%, 0:42 left``."""
    rate = words / seconds if seconds > 0 else 0.0
    line = f"parsing: {sentences:,} sentences, {words:,} words, {rate:,.0f} words/s"
    if share is not None and share > 0:
        left = seconds * (1 - share) / share
        line += f", {min(share, 1.0):.0%}, {clock(left)} left"
    return line


def bar_line(description: str, done: int, total: int, seconds: float, postfix: str = "", width: int = 24) -> str:
    """``epoch 1/4 [######..........] 5000/20000  25% 0:12<0:36 loss 0.41``."""
    fraction = done / total if total else 1.0
    filled = int(round(width * min(fraction, 1.0)))
    left = seconds / done * (total - done) if done else 0.0
    bar = "#" * filled + "." * (width - filled)
    text = f"{description} [{bar}] {done}/{total} {100 * fraction:3.0f}% {clock(seconds)}<{clock(left)}"
    return f"{text} {postfix}" if postfix else text


def clock(seconds: float) -> str:
    """``H:MM:SS`` or ``M:SS``."""
    minutes, secs = divmod(int(round(max(seconds, 0))), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
