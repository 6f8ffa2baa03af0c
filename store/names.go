package store

import (
	"fmt"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// NameProblem says what makes s unfit as a name that identifies a run's
// parts (a GPU, a model, an engine, a submitter), or "" when it is fit.
// Two names that read alike must be one name, so beyond TextProblem's
// rule on one line a name holds
//   - no invisible character: no format character (Unicode category Cf:
//     zero-width space and joiners, soft hyphen, byte order mark, word
//     joiner), no filler that draws as a space (Hangul fillers, braille
//     blank), no variation selector or combining grapheme joiner;
//   - no space but U+0020 (no no-break, thin or ideographic space);
//   - no private-use or unassigned character;
//   - letters of one script, besides the CJK scripts (Han, Hiragana,
//     Katakana, Hangul, Bopomofo), which may join any one other: "Qwen3
//     中文" is a name, "RТХ 3060" with a Cyrillic Т and Х is not. Digits,
//     punctuation and combining marks belong to no script.
func NameProblem(s string) string {
	if msg := TextProblem(s, false); msg != "" {
		return msg
	}
	var first rune
	var firstScript string
	for _, c := range s {
		switch {
		case invisible(c):
			return fmt.Sprintf("contains the invisible character U+%04X: remove it, so that the name reads as it is written", c)
		case c != ' ' && unicode.Is(unicode.Zs, c):
			return fmt.Sprintf("contains the space U+%04X: write spaces as U+0020", c)
		case unicode.Is(unicode.Co, c) || !assigned(c):
			return fmt.Sprintf("contains U+%04X, a private-use or unassigned character", c)
		}
		if !unicode.IsLetter(c) {
			continue
		}
		sc := script(c)
		if sc == "" || cjk(sc) {
			continue
		}
		if firstScript == "" {
			first, firstScript = c, sc
			continue
		}
		if sc != firstScript {
			return fmt.Sprintf("mixes letters of the %s and %s scripts (%c U+%04X is %s, %c U+%04X is %s): write a name in one script, so that a look-alike letter cannot make a second name that reads as the first",
				firstScript, sc, first, first, firstScript, c, c, sc)
		}
	}
	return ""
}

// NFC is s in Unicode normalization form C: one spelling of each accented
// letter (é, not e and a combining acute), so that names written either
// way are one name.
func NFC(s string) string { return norm.NFC.String(s) }

// invisible reports the characters that draw nothing (or as a space)
// beyond the format characters.
func invisible(c rune) bool {
	switch c {
	case 0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x2800, 0x3164, 0xFFA0:
		return true
	}
	return unicode.Is(unicode.Cf, c) || unicode.Is(unicode.Variation_Selector, c)
}

// assigned reports whether c is an assigned character of Unicode as Go
// knows it.
func assigned(c rune) bool {
	return unicode.In(c, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// script names the script of a letter, or "" for Common and Inherited.
func script(c rune) string {
	for name, table := range unicode.Scripts {
		if name != "Common" && name != "Inherited" && unicode.Is(table, c) {
			return name
		}
	}
	return ""
}

func cjk(script string) bool {
	switch script {
	case "Han", "Hiragana", "Katakana", "Hangul", "Bopomofo":
		return true
	}
	return false
}
