package site

import "testing"

func TestModelHref(t *testing.T) {
	for name, want := range map[string]string{
		"org/model":     "/models/org/model",
		"org/a#b c?d":   "/models/org/a%23b%20c%3Fd",
		"plain-1.5_x.y": "/models/plain-1.5_x.y",
	} {
		if got := modelHref(name); got != want {
			t.Errorf("modelHref(%q) = %q, want %q", name, got, want)
		}
	}
}
