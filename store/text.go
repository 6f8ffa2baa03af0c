package store

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// TextProblem says what makes s unfit to be stored as text, or "" when it
// is fit. It is the one rule for every text a client writes (a run's
// title, notes and names, a flag's text, a moderator's reason or note, a
// key's name): bytes that are not UTF-8, control characters (C0 with NUL,
// DEL, C1) and the bidirectional formatting characters (which can make a
// value read as something else) are refused; a text of several lines
// (lines true) may hold line breaks (\n, \r) and tabs.
func TextProblem(s string, lines bool) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, c := range s {
		if lines && (c == '\n' || c == '\t' || c == '\r') {
			continue
		}
		switch {
		case unicode.IsControl(c):
			return fmt.Sprintf("contains the control character U+%04X", c)
		case bidiControl(c):
			return fmt.Sprintf("contains the bidirectional formatting character U+%04X", c)
		}
	}
	return ""
}

// bidiControl reports the characters that reorder text: embeddings and
// overrides (U+202A–U+202E), isolates (U+2066–U+2069) and marks.
func bidiControl(c rune) bool {
	return c >= 0x202A && c <= 0x202E || c >= 0x2066 && c <= 0x2069 || c == 0x200E || c == 0x200F || c == 0x061C
}
