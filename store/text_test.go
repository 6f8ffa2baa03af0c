package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestTextProblem: the one rule for stored text, on one line and on
// several.
func TestTextProblem(t *testing.T) {
	tests := []struct {
		name, text string
		lines      bool
		want       string // in the problem; "" for none
	}{
		{"plain", "RTX 3090, vLLM 0.11", false, ""},
		{"accents, CJK, emoji", "Qwen3 中文 — résumé 🚀", false, ""},
		{"zero-width joiner in free text", "क्\u200dष", false, ""},
		{"lines where lines are allowed", "first\nsecond\r\n\tindented", true, ""},
		{"newline on one line", "a\nb", false, "control character U+000A"},
		{"tab on one line", "a\tb", false, "control character U+0009"},
		{"NUL", "a\x00b", true, "control character U+0000"},
		{"escape", "0.1\x1b[31m", true, "control character U+001B"},
		{"DEL", "a\x7fb", true, "control character U+007F"},
		{"C1 next line", "a\u0085b", true, "control character U+0085"},
		{"C1 CSI", "a\u009bb", false, "control character U+009B"},
		{"right-to-left override", "a\u202Eb", true, "bidirectional formatting character U+202E"},
		{"left-to-right embedding", "a\u202Ab", false, "bidirectional formatting character U+202A"},
		{"isolate", "a\u2067b", true, "bidirectional formatting character U+2067"},
		{"right-to-left mark", "a\u200Fb", false, "bidirectional formatting character U+200F"},
		{"Arabic letter mark", "a\u061Cb", false, "bidirectional formatting character U+061C"},
		{"invalid UTF-8", "a\xffb", true, "not valid UTF-8"},
		{"a lone surrogate's bytes", "a\xed\xa0\x80b", false, "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := store.TextProblem(tt.text, tt.lines)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("TextProblem(%q, %v) = %q, want %q", tt.text, tt.lines, got, tt.want)
			}
		})
	}
}

// TestFreeTextByOneRule: a flag's text, a moderator's reason and note, a
// key's name and a run's title and notes are held to TextProblem alike:
// what one refuses, all refuse, naming the field.
func TestFreeTextByOneRule(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		stored, _, err := st.CreateRuns(ctx, storetest.Runs(93, 1))
		if err != nil {
			t.Fatal(err)
		}
		id := stored[0].ID
		admin, _, err := st.CreateKey(ctx, "admin", true)
		if err != nil {
			t.Fatal(err)
		}
		alice, _, err := st.CreateKey(ctx, "alice", false)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"tampered \u202Etxt.exe", "next\u0085line", "nul\x00", "bad \xff byte"} {
			want := store.TextProblem(bad, true)
			field := func(what string, err error, name string) {
				t.Helper()
				var fe *store.FieldError
				var ve *store.ValidationError
				switch {
				case errors.As(err, &fe) && fe.Field == name && fe.Message == want:
				case errors.As(err, &ve) && len(ve.Problems) == 1 && ve.Problems[0].Pointer == name && ve.Problems[0].Message == want:
				default:
					t.Errorf("%s %q: %v; want %s: %s", what, bad, err, name, want)
				}
			}
			_, err := st.FlagRun(ctx, id, alice, store.FlagReasons[0], bad)
			field("flag text", err, "text")
			_, err = st.HideRun(ctx, id, admin, bad)
			field("hide reason", err, "reason")
			_, _, err = st.CreateKey(ctx, "k"+bad, false)
			field("key name", err, "name")
			title, notes := "t"+bad, "n"+bad
			_, err = st.UpdateRunMeta(ctx, id, store.MetaPatch{Title: &title}, admin)
			field("title", err, "/title")
			_, err = st.UpdateRunMeta(ctx, id, store.MetaPatch{Notes: &notes}, admin)
			field("notes", err, "/notes")
		}
		f, err := st.FlagRun(ctx, id, alice, store.FlagReasons[0], "fine")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.ResolveFlag(ctx, id, f.ID, admin, "ok \u202E"); err == nil || !strings.Contains(err.Error(), "bidirectional") {
			t.Errorf("resolve note with an override: %v", err)
		}
	})
}

// TestAuthenticateMalformedToken: a token of the right shape whose id holds
// bytes no key has (NUL, not UTF-8) is no key on either store, never a
// database error.
func TestAuthenticateMalformedToken(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		for _, id := range []string{"aaaaaaaaaaaa\xff", "aaaaaaaaaaaa\x00", "aaaaaaaaaaaa!"} {
			_, err := st.Authenticate(context.Background(), "mxd_"+id+"_"+strings.Repeat("a", 52))
			if !errors.Is(err, store.ErrUnauthorized) {
				t.Errorf("id %q: %v; want ErrUnauthorized", id, err)
			}
		}
	})
}
