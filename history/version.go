package history

import (
	"cmp"
	"strconv"
	"strings"
	"unicode"
)

// CompareVersions orders engine versions as their releases came: numbers
// compare as numbers (0.10 after 0.9), a pre-release before its release
// (0.6.0rc1 before 0.6.0), a leading v and build metadata (+cu128, a
// commit in parentheses) are ignored, and llama.cpp's build numbers
// (b6918, or "6918 (1f0c1a7)") compare by build. It returns -1, 0 or +1.
func CompareVersions(a, b string) int {
	ta, tb := versionTokens(a), versionTokens(b)
	for i := 0; i < len(ta) || i < len(tb); i++ {
		switch {
		case i >= len(ta):
			return -releaseAfter(tb[i])
		case i >= len(tb):
			return releaseAfter(ta[i])
		}
		x, y := ta[i], tb[i]
		xn, xerr := strconv.ParseUint(x, 10, 64)
		yn, yerr := strconv.ParseUint(y, 10, 64)
		switch {
		case xerr == nil && yerr == nil:
			if c := cmp.Compare(xn, yn); c != 0 {
				return c
			}
		case xerr == nil:
			return 1 // 1.0.1 after 1.0rc1
		case yerr == nil:
			return -1
		default:
			if c := strings.Compare(x, y); c != 0 {
				return c
			}
		}
	}
	return 0
}

// releaseAfter is +1 when a version that goes on with tok comes after one
// that stops before it (1.0.1 after 1.0), -1 when before (1.0rc1 before 1.0).
func releaseAfter(tok string) int {
	if _, err := strconv.ParseUint(tok, 10, 64); err == nil {
		return 1
	}
	return -1
}

// versionTokens splits a version into runs of digits and of letters,
// lower-cased, without a leading v, and without what only identifies a
// build (semver's +metadata, a commit in parentheses).
func versionTokens(v string) []string {
	v = strings.ToLower(strings.TrimSpace(v))
	if i := strings.IndexAny(v, "+("); i >= 0 {
		v = v[:i]
	}
	if len(v) > 1 && v[0] == 'v' && unicode.IsDigit(rune(v[1])) {
		v = v[1:]
	}
	var out []string
	cur := ""
	kind := 0 // 1 digits, 2 letters
	for _, r := range v {
		k := 0
		switch {
		case unicode.IsDigit(r):
			k = 1
		case unicode.IsLetter(r):
			k = 2
		}
		if k != kind && cur != "" {
			out = append(out, cur)
			cur = ""
		}
		kind = k
		if k != 0 {
			cur += string(r)
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	// A number that is all digits leads; llama.cpp's "b6918" is build 6918.
	if len(out) > 1 && out[0] == "b" {
		out = out[1:]
	}
	return out
}
