package server

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzParseQuery: any query string either parses into exactly what the
// standard parser reads (when that succeeds, without repeats) or is a
// bounded list of problems; never a panic.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"", "gpu=RTX%203090&limit=20", "gpu=%zz", "limit=1;2", "a=1&a=2", "%zz=1", "=&&=", strings.Repeat("p=1&", 30)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := parseQuery(raw)
		if err != nil {
			fe, ok := err.(fieldErrors)
			if !ok || len(fe) == 0 || len(fe) > maxProblems+1 {
				t.Fatalf("error %T with %d problems", err, len(fe))
			}
			for _, p := range fe {
				if len(p.Message) > 400 || p.Field != nil && len(*p.Field) > 400 {
					t.Fatalf("an unbounded problem: %+v", p)
				}
			}
			return
		}
		want, werr := url.ParseQuery(raw)
		if werr != nil {
			t.Fatalf("parseQuery accepted %q, which the standard parser refuses: %v", raw, werr)
		}
		for k, vs := range want {
			if len(vs) != 1 || got.Get(k) != vs[0] {
				t.Fatalf("%q: %s = %q, want %q", raw, k, got[k], vs)
			}
		}
	})
}
