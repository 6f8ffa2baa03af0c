package site

import (
	"testing"

	"golang.org/x/text/language"
)

func TestNumbersForPeople(t *testing.T) {
	en := newNumbers(language.English)
	for _, c := range []struct {
		v    float64
		want string
	}{
		{93.74767963046673, "93.7"}, {1.3653671270003542, "1.37"}, {1273.2, "1,273"}, {279.1, "279"},
		{0.012345, "0.0123"}, {8, "8"}, {1.5, "1.5"}, {99.96, "100"}, {9.999, "10"}, {0, "0"},
		{-12.34, "-12.3"}, {16384, "16,384"}, {1234567.8, "1,234,568"},
	} {
		if got := en.float(c.v); got != c.want {
			t.Errorf("float(%v) = %q, want %q", c.v, got, c.want)
		}
	}
	if got := en.num(new(int)); got != "0" {
		t.Errorf("num(&0) = %q", got)
	}
	if got := en.num((*float64)(nil)); got != "—" {
		t.Errorf("num(nil) = %q", got)
	}
	if got := en.fixed(1.23456, 3); got != "1.235" {
		t.Errorf("fixed = %q", got)
	}
}

// Contexts are grouped and speeds take three significant digits in every
// language of the site: 50,000 tokens, not 50000; 30.0 tok/s, not 29.98.
func TestNumbersInEveryLanguage(t *testing.T) {
	for _, c := range []struct {
		lang       language.Tag
		ctx        int
		wantCtx    string
		speed      float64
		wantSpeed  string
		wantBig    string
		wantSmallK string
	}{
		{language.English, 50000, "50,000", 29.98, "30", "1,215", "1,152"},
		{language.MustParse("zh-Hant"), 50000, "50,000", 29.98, "30", "1,215", "1,152"},
		{language.Thai, 50000, "50,000", 29.98, "30", "1,215", "1,152"},
	} {
		n := newNumbers(c.lang)
		if got := n.tokens(c.ctx); got != c.wantCtx {
			t.Errorf("%s: tokens(%d) = %q, want %q", c.lang, c.ctx, got, c.wantCtx)
		}
		if got := n.tokens(1152); got != c.wantSmallK {
			t.Errorf("%s: tokens(1152) = %q, want %q", c.lang, got, c.wantSmallK)
		}
		if got := n.tokens(131072); got != "128K" {
			t.Errorf("%s: tokens(131072) = %q, want 128K", c.lang, got)
		}
		if got := n.tokens(1048576 * 2); got != "2,048K" {
			t.Errorf("%s: tokens(2Mi) = %q, want 2,048K", c.lang, got)
		}
		if got := n.tokens(0); got != "0" {
			t.Errorf("%s: tokens(0) = %q, want 0", c.lang, got)
		}
		if got := n.float(c.speed); got != c.wantSpeed {
			t.Errorf("%s: float(%v) = %q, want %q", c.lang, c.speed, got, c.wantSpeed)
		}
		if got := n.float(1214.7); got != c.wantBig {
			t.Errorf("%s: float(1214.7) = %q, want %q", c.lang, got, c.wantBig)
		}
		for v, want := range map[float64]string{94.23: "94.2", 3.14159: "3.14", 0.04567: "0.0457", 180.5: "181"} {
			if got := n.float(v); got != want {
				t.Errorf("%s: float(%v) = %q, want %q", c.lang, v, got, want)
			}
		}
	}
}
