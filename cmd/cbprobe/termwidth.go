package main

import (
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Cursor controls of the live lines. They move the cursor and erase; they
// hold no colour (colour goes through fatih/color only, in results.TextOptions)
// and are written only to a terminal.
const (
	// eraseLine returns to the start of the line and erases it.
	eraseLine = "\r\x1b[K"
)

// eraseLinesAbove moves the cursor up n lines and erases from there to the
// end of the screen ("" for n <= 0).
func eraseLinesAbove(n int) string {
	if n <= 0 {
		return ""
	}
	return "\x1b[" + strconv.Itoa(n) + "A\x1b[J"
}

// defaultWidth is the terminal width in columns assumed when COLUMNS is not set.
const defaultWidth = 80

// terminalWidth is the width in columns a live line must fit: $COLUMNS when
// it holds a positive number, else defaultWidth. (golang.org/x/term is not a
// dependency of cbprobe; shells export COLUMNS to their children when asked,
// e.g. `COLUMNS=$COLUMNS cbprobe watch ...`.)
func terminalWidth() int {
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	return defaultWidth
}

// minNameWidth is the fewest columns a breaker name is cut to before the
// rest of a live line is cut instead.
const minNameWidth = 16

// fitLine joins a breaker name (padded to pad columns) and the rest of a
// live line so that the result is at most width columns: first the name is
// shortened in its middle with "…" (its start and its end, where a Feign
// name's method is, stay readable), down to minNameWidth; then the line's
// end is cut with "…". width <= 0 means no limit. Columns are counted as
// runes: the lines hold no wide characters.
func fitLine(name string, pad int, rest string, width int) string {
	padded := name
	if n := utf8.RuneCountInString(name); n < pad {
		padded += strings.Repeat(" ", pad-n)
	}
	if width <= 0 || utf8.RuneCountInString(padded)+utf8.RuneCountInString(rest) <= width {
		return padded + rest
	}
	avail := width - utf8.RuneCountInString(rest)
	if avail >= utf8.RuneCountInString(name) {
		return name + rest
	}
	short := ellipsizeMiddle(name, max(avail, minNameWidth))
	return truncateEnd(short+rest, width)
}

// ellipsizeMiddle shortens s to n runes by replacing its middle with "…".
func ellipsizeMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:max(n, 0)])
	}
	head := (n - 1) / 2
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// truncateEnd cuts s to n runes, ending it with "…" when it was cut.
func truncateEnd(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:max(n, 0)])
	}
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}
