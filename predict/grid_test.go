package predict

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
)

// TestGridTooLongAxisSaysWhatWasAsked: an axis the caller gave with more
// values than a grid has is refused for what was asked, not for what the
// run measured.
func TestGridTooLongAxisSaysWhatWasAsked(t *testing.T) {
	ctx := context.Background()
	st := sixRuns(t)
	runs, _, err := st.RunConfigs(ctx, store.RunFilter{}, 1)
	if err != nil || len(runs) == 0 {
		t.Fatal(err, len(runs))
	}
	c := New(st, DefaultCacheBytes, nil)
	c.SetFitWait(-1)
	sel := Selection{RunID: runs[0].ID}
	many := make([]int, MaxGridSide+2)
	for i := range many {
		many[i] = 1024 * i
	}
	for _, tc := range []struct {
		field            string
		contexts, concur []int
	}{
		{"contexts", many, []int{1}},
		{"concurrencies", []int{0}, many[1:]},
	} {
		_, err := c.Grid(ctx, sel, tc.contexts, tc.concur, calculator.Query{Concurrency: 1})
		var fe *store.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Fatalf("%d %s: %v, want an error naming %s", len(many), tc.field, err, tc.field)
		}
		want := "a grid has at most 16 " + tc.field + ", and "
		if !strings.Contains(fe.Message, want) || !strings.Contains(fe.Message, "were asked") || strings.Contains(fe.Message, "measured") {
			t.Errorf("%s: %q, want %q… were asked, not what the run measured", tc.field, fe.Message, want)
		}
	}
}
