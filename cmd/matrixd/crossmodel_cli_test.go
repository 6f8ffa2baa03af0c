package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/calculator"
)

// TestCalcAnotherModel: the CLI asks capacity, prefill, a grid and the
// planner about a model with no run on the GPU as the API does
// (scaled_model, a grid's cells marked so); the planner only with
// --include-scaled-model.
func TestCalcAnotherModel(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	ctx := context.Background()
	if err := run(ctx, append([]string{"import", "--db", db}, seedPages(t, dir)...), env(nil), nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	// The decode answer's total, which the grid's cell repeats, and the
	// band of the calibrated move between models of the run's engine.
	var dec bytes.Buffer
	if err := run(ctx, []string{"calc", "decode", "--db", db, "--model", "fara", "--gpu", "RTX 3090", "--context", "16K", "--concurrency", "8"}, env(nil), nil, &dec, io.Discard); err != nil {
		t.Fatal(err)
	}
	total := regexp.MustCompile(`total tok/s\s+([0-9.]+)`).FindStringSubmatch(dec.String())
	if total == nil {
		t.Fatalf("calc decode prints no total:\n%s", dec.String())
	}
	band := fmt.Sprintf("±%.1f%% total", 100*calculator.Calibration().ModelMoveFor("vllm").Band)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"calc", "capacity", "--model", "fara", "--gpu", "RTX 3090", "--context", "16K"}, []string{"scaled_model  run rslyzhlpx6tot73t", "KV capacity for another model, not measured"}},
		{[]string{"calc", "prefill", "--model", "fara", "--gpu", "RTX 3090", "--context", "16K"}, []string{"scaled_model  run rslyzhlpx6tot73t", "FLOPs of a prompt token"}},
		{[]string{"calc", "decode", "--model", "fara", "--gpu", "RTX 3090", "--context", "16K", "--concurrency", "8"}, []string{band, "scaling to another model"}},
		{[]string{"calc", "grid", "--model", "fara", "--gpu", "RTX 3090", "--contexts", "16K", "--concurrencies", "8"}, []string{"m" + total[1], "m from another model's run"}},
		{[]string{"calc", "plan", "--model", "fara", "--context", "16K", "--min-tok-s", "30", "--include-scaled-model"}, []string{"Fara1.5-4B (from cyankiwi/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit)", "scaled_model"}},
	} {
		var out bytes.Buffer
		if err := run(ctx, append(c.args, "--db", db), env(nil), nil, &out, io.Discard); err != nil {
			t.Fatalf("%s: %v", strings.Join(c.args, " "), err)
		}
		for _, want := range c.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s lacks %q:\n%s", strings.Join(c.args, " "), want, out.String())
			}
		}
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"calc", "plan", "--db", db, "--model", "fara", "--context", "16K", "--min-tok-s", "30"}, env(nil), nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "scaled_model") {
		t.Errorf("plan without --include-scaled-model:\n%s", out.String())
	}
	err := run(ctx, []string{"calc", "plan", "--db", db, "--context", "16K", "--min-tok-s", "30", "--include-scaled-model"}, env(nil), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--include-scaled-model plans one model") {
		t.Errorf("--include-scaled-model without --model: %v, want it named", err)
	}
}
