package ingest

import (
	"strings"
	"testing"
)

// TestPublishedGrids: the grids built in are read as their manifests say,
// each run stating its licence; those without one are skipped (their
// files are not built in), and a series table that is byte for byte a
// corpus table is read once.
func TestPublishedGrids(t *testing.T) {
	batches, skipped, err := ReadDataset(PublishedGrids(), "testdata", true)
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, b := range batches {
		for _, r := range b.Runs {
			runs++
			if r.License == "" || r.Publisher == "" || r.RetrievedAt == "" || r.SourceURL == "" || r.Source == nil {
				t.Errorf("%s: licence %q, publisher %q, retrieved %q, source %q: want all stated and the files kept", b.Name, r.License, r.Publisher, r.RetrievedAt, r.SourceURL)
			}
		}
		if strings.Contains(b.Name, "-b6918") {
			t.Errorf("%s read: its table is the corpus's, already read", b.Name)
		}
	}
	// llama.cpp 11 + series 10 + LMDeploy 6 + TensorRT-LLM 9 + InferenceX's vLLM 4.
	if runs != 40 || len(batches) != 40 {
		t.Errorf("%d runs in %d batches, want 40 and 40", runs, len(batches))
	}
	if len(skipped) != 14 {
		t.Errorf("skipped %d grids, want the 14 of llm-benchmaq, which state no licence: %v", len(skipped), skipped)
	}
	for _, s := range skipped {
		if !strings.HasPrefix(s, "testdata/corpus/vllm/vllm-h100-") && !strings.HasPrefix(s, "testdata/corpus/vllm/vllm-l40sx2-") {
			t.Errorf("skipped %s", s)
		}
	}
}
