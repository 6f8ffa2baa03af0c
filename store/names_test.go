package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
)

// TestNameProblem: names that read alike but are spelt otherwise are
// refused; names in one script, with CJK beside it, are names.
func TestNameProblem(t *testing.T) {
	tests := []struct {
		name, text string
		want       string // in the problem; "" for none
	}{
		{"Latin", "NVIDIA GeForce RTX 3060", ""},
		{"accented", "Jörg's Müller-Bench", ""},
		{"decomposed accent", "Jo\u0308rg", ""},
		{"Cyrillic and Latin in one word", "ЯндексGPT", "mixes"},
		{"one Cyrillic word", "Сайга", ""},
		{"Greek alone", "Ελληνικά", ""},
		{"CJK with Latin", "Qwen3 中文", ""},
		{"Japanese with Latin", "Llama 日本語 カタカナ ひらがな", ""},
		{"Korean with Latin", "EXAONE 한국어", ""},
		{"symbols and digits", "Intel® Xeon™ w9-3495X @ 1.9GHz (56C/112T) ×2", ""},
		{"Cyrillic Т and Х in RTX", "RТХ 3060", "mixes letters of the Latin and Cyrillic scripts"},
		{"Greek omicron", "Llama-3.1-8B-Instruct-Αwq", "mixes letters of the Latin and Greek scripts"},
		{"CJK does not excuse a third script", "Qwen3 中文 Рус", "mixes"},
		{"zero-width space", "RTX\u200b3060", "invisible character U+200B"},
		{"soft hyphen", "RTX 30\u00ad60", "invisible character U+00AD"},
		{"byte order mark", "\ufeffRTX 3060", "invisible character U+FEFF"},
		{"zero-width joiner", "RTX 3060\u200d", "invisible character U+200D"},
		{"word joiner", "RTX\u20603060", "invisible character U+2060"},
		{"Hangul filler", "RTX\u31643060", "invisible character U+3164"},
		{"variation selector", "RTX 3060\ufe0f", "invisible character U+FE0F"},
		{"tag character", "RTX 3060\U000E0041", "invisible character U+E0041"},
		{"no-break space", "RTX\u00a03060", "space U+00A0"},
		{"ideographic space", "RTX\u30003060", "space U+3000"},
		{"private use", "RTX \ue0003060", "private-use or unassigned"},
		{"unassigned", "RTX \U000E00803060", "private-use or unassigned"},
		{"control", "RTX\u00853060", "control character U+0085"},
		{"bidi override", "RTX \u202e0603", "bidirectional"},
		{"NUL", "RTX\x003060", "control character U+0000"},
		{"invalid UTF-8", "RTX \xff", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := store.NameProblem(tt.text)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("NameProblem(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// TestNamesOfARun: every name that identifies a part of a run is held to
// NameProblem, at its pointer, and stored in NFC: a name written with a
// combining accent is the name written with the accented letter.
func TestNamesOfARun(t *testing.T) {
	fields := map[string]func(*store.Run) *string{
		"/submitter":              func(r *store.Run) *string { return &r.Submitter },
		"/model/name":             func(r *store.Run) *string { return &r.Model.Name },
		"/model/quantization":     func(r *store.Run) *string { return &r.Model.Quantization },
		"/hardware/type":          func(r *store.Run) *string { return &r.Hardware.Type },
		"/hardware/gpu":           func(r *store.Run) *string { return &r.Hardware.GPU },
		"/hardware/cpu":           func(r *store.Run) *string { return &r.Hardware.CPU },
		"/engine/name":            func(r *store.Run) *string { return &r.Engine.Name },
		"/engine/version":         func(r *store.Run) *string { return &r.Engine.Version },
		"/engine/quantization":    func(r *store.Run) *string { return &r.Engine.Quantization },
		"/engine/backend":         func(r *store.Run) *string { return &r.Engine.Backend },
		"/benchmark/tool":         func(r *store.Run) *string { return &r.Benchmark.Tool },
		"/benchmark/served_model": func(r *store.Run) *string { return &r.Benchmark.ServedModel },
	}
	for ptr, field := range fields {
		for _, bad := range []string{"RТХ 3060", "RTX\u200b3060", "RTX 30\u00ad60"} {
			r := validRun(t)
			*field(&r) = bad
			probs := problemsOf(t, r)
			if len(probs) != 1 || probs[0].Pointer != ptr || probs[0].Message != store.NameProblem(bad) {
				t.Errorf("%s = %q: problems %v; want one at %s", ptr, bad, probs, ptr)
			}
		}
	}
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		r := validRun(t)
		r.Hardware.GPU, r.Model.Name = "Ge\u0301Force RTX 3060", "Mode\u0300le-7B"
		stored, _, err := st.CreateRuns(ctx, []store.Run{r})
		if err != nil {
			t.Fatal(err)
		}
		if got := stored[0].Hardware.GPU; got != "G\u00e9Force RTX 3060" {
			t.Errorf("gpu stored as %q, want NFC", got)
		}
		read, err := st.Run(ctx, stored[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if read.Hardware.GPU != "G\u00e9Force RTX 3060" || read.Model.Name != "Mod\u00e8le-7B" {
			t.Errorf("read back %q, %q; want NFC", read.Hardware.GPU, read.Model.Name)
		}
		composed := validRun(t)
		composed.Hardware.GPU, composed.Model.Name = "G\u00e9Force RTX 3060", "Mod\u00e8le-7B"
		if _, created, err := st.CreateRuns(ctx, []store.Run{composed}); err != nil || created[0] {
			t.Errorf("the same run with composed names: created %v, %v; want the stored one", created, err)
		}
	})
}
