"""The progress line of ``kgparser parse``: sentences and words parsed,
words per second and, when the input's size is known, the share read and an
estimate of the time left, rewritten in place on a terminal."""
from __future__ import annotations

import sys
import time
from typing import IO, Callable

#: seconds between two refreshes of the line: often enough to watch, rarely enough to cost nothing
REFRESH_SECONDS = 0.25


class Progress:
    """``update(sentences, words)`` after each chunk; ``close()`` clears the line.

    ``done_share``: a function giving the share of the input read so far
    (0..1), or None where the size is unknown (standard input, a pipe).
    Nothing is shown unless ``enabled``."""

    def __init__(self, enabled: bool, done_share: Callable[[], float | None] = lambda: None,
                 stream: IO[str] | None = None):
        self.enabled, self.done_share = enabled, done_share
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()
        self.shown_at: float | None = None
        self.shown = False

    def update(self, sentences: int, words: int) -> None:
        """Rewrite the line, at most every :data:`REFRESH_SECONDS`."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.shown_at is not None and now - self.shown_at < REFRESH_SECONDS:
            return
        self.shown_at = now
        self.stream.write("\r\x1b[K" + progress_line(sentences, words, now - self.started, self.done_share()))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """Clear the line, so that the summary that follows starts a clean one."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def progress_line(sentences: int, words: int, seconds: float, share: float | None) -> str:
    """``parsing: 1,200 sentences, 15,000 words, 21,000 words/s, 37%, 0:42 left``."""
    rate = words / seconds if seconds > 0 else 0.0
    line = f"parsing: {sentences:,} sentences, {words:,} words, {rate:,.0f} words/s"
    if share is not None and share > 0:
        left = seconds * (1 - share) / share
        line += f", {min(share, 1.0):.0%}, {_clock(left)} left"
    return line


def _clock(seconds: float) -> str:
    """``H:MM:SS`` or ``M:SS``."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
