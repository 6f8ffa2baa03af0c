package server

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
