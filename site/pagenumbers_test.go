package site_test

import (
	"encoding/json"
	"html"
	"regexp"
	"strings"
	"testing"
)

var (
	decimalNumber = regexp.MustCompile(`\d[\d,]*(\.\d+)+`)
	tag           = regexp.MustCompile(`(?s)<[^>]*>`)
)

// rawNumbers are the numbers of a page's text written as a machine writes
// them: a decimal with more than four significant digits (93.74767963046673
// where people read 93.7).
func rawNumbers(text string) []string {
	var out []string
	for _, m := range decimalNumber.FindAllString(text, -1) {
		if strings.Count(m, ".") > 1 {
			continue // a version (driver 580.178.04), not a value
		}
		digits := strings.TrimLeft(strings.NewReplacer(",", "", ".", "").Replace(m), "0")
		if len(digits) > 4 {
			out = append(out, m)
		}
	}
	return out
}

// textOfPage is what a reader of a page sees: its text without markup
// (and so without the exact values kept in attributes).
func textOfPage(body string) string { return html.UnescapeString(tag.ReplaceAllString(body, " ")) }

// TestToolRunPagesWriteNumbersForPeople: a run imported from a tool's
// output (llama-batched-bench, whose values carry every digit of a float)
// is shown with numbers people read, on its page and in the run list.
func TestToolRunPagesWriteNumbersForPeople(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	ct, body := multipartBody(t, toolFixture(t, "llama-pr16894.META.json"), "llama-pr16894-qwen2-7b.md")
	rec := e.send(t, "POST", "/v1/runs/import?format=llama-batched-bench", with(k["alice"], "Content-Type", ct), body)
	if rec.Code != 201 {
		t.Fatalf("import: %d %.300s", rec.Code, rec.Body)
	}
	var run struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &run); err != nil {
		t.Fatal(err)
	}
	if raw := rawNumbers(e.do(t, "GET", "/v1/runs/"+run.ID, nil).Body.String()); len(raw) == 0 {
		t.Fatal("the fixture has no value with many digits: the test proves nothing")
	}
	for _, target := range []string{"/runs/" + run.ID, "/", "/?sort=-peak_total_tok_s", "/leaderboard?context_tokens=512&concurrency=2"} {
		page := e.page(t, target, "")
		if page.Code != 200 {
			t.Fatalf("%s: %d", target, page.Code)
		}
		if raw := rawNumbers(textOfPage(page.Body.String())); len(raw) > 0 {
			t.Errorf("%s: numbers not written for people: %q", target, raw)
		}
	}
}
