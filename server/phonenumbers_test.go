package server_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// longDecimal is a decimal with four or more significant digits
	// (29.98, 1,214.7): people read three.
	longDecimal = regexp.MustCompile(`(?:^|[^\d.,])(\d[\d,]*\.\d+)(?:[^\d.]|$)`)
	// ungrouped is a count of five or more digits written without its
	// groups (50000): a date's year and an identifier are not counts.
	ungrouped = regexp.MustCompile(`(?:^|[^\w.:/-])(\d{5,})(?:[^\w.:/-]|$)`)
)

// preformatted is a command as written, and the series' steps the API's
// own words (a verdict's why), not numbers the page writes.
var preformatted = regexp.MustCompile(`(?s)<pre.*?</pre>|<table class="cells steps">.*?</table>`)

func longDecimals(text string) []string {
	var out []string
	for _, m := range longDecimal.FindAllStringSubmatch(text, -1) {
		digits := strings.TrimLeft(strings.NewReplacer(",", "", ".", "").Replace(m[1]), "0")
		if len(digits) > 3 {
			out = append(out, m[1])
		}
	}
	return out
}

// TestPagesWriteContextsGroupedAndSpeedsToThreeDigits: in every language a
// context is written grouped (50,000, not 50000) and a speed with three
// significant digits (30.0 or 30, not 29.98) on the run page, the run list
// and the leaderboard.
func TestPagesWriteContextsGroupedAndSpeedsToThreeDigits(t *testing.T) {
	e := newEnv(t, 0)
	// A run whose contexts are not whole K: 50,000 and 1,152 tokens.
	r := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	r.ID, r.Title = "", r.Title+" (odd contexts)"
	r.Decode = slices.Clone(r.Decode)
	for i := range r.Decode {
		switch r.Decode[i].ContextTokens {
		case 16384:
			r.Decode[i].ContextTokens = 50000
		case 32768:
			r.Decode[i].ContextTokens = 1152 * 50
		}
	}
	stored, _, err := e.st.CreateRun(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	run := struct{ ID string }{stored.ID}
	for _, lang := range []string{"en", "zh-Hant", "th"} {
		for _, target := range []string{"/runs/" + run.ID, "/", "/leaderboard?context_tokens=50000&concurrency=2"} {
			page := e.page(t, target+sep(target)+"lang="+lang, "")
			if page.Code != 200 {
				t.Fatalf("%s: %d", target, page.Code)
			}
			text := textOfPage(preformatted.ReplaceAllString(page.Body.String(), ""))
			if raw := longDecimals(text); len(raw) > 0 {
				t.Errorf("%s in %s: more than three significant digits: %q", target, lang, raw)
			}
			if raw := ungrouped.FindAllString(text, -1); len(raw) > 0 {
				t.Errorf("%s in %s: numbers not grouped: %q", target, lang, raw)
			}
		}
	}
}

func sep(target string) string {
	if strings.Contains(target, "?") {
		return "&"
	}
	return "?"
}
