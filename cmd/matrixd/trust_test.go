package main

import (
	"testing"

	"github.com/matrixd/matrixd/assess"
)

// TestTrustCorpus holds the plausibility checks to the real runs (the
// corpus and the bundled pages: none may be flagged) and to falsified
// copies of them (every one must be caught). matrixd eval --trust prints
// the same as a table.
func TestTrustCorpus(t *testing.T) {
	runs, err := trustRuns("../../ingest/testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	w, err := assess.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := w.EvalTrust(runs)
	if len(runs) < 40 {
		t.Fatalf("only %d real runs read", len(runs))
	}
	for _, f := range ev.FalseFlags {
		t.Errorf("a real run is flagged: %s", f)
	}
	for _, m := range ev.Missed {
		t.Errorf("a falsified copy is not flagged: %s", m)
	}
	for _, d := range ev.Doctored {
		if d.Copies < 10 {
			t.Errorf("%s: only %d copies made", d.Name, d.Copies)
		}
	}
}
