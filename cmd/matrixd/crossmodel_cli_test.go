package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestCalcAnotherModel: the CLI asks capacity and prefill about a model
// with no run on the GPU as the API does (scaled_model).
func TestCalcAnotherModel(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	ctx := context.Background()
	if err := run(ctx, append([]string{"import", "--db", db}, seedPages(t, dir)...), env(nil), nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"calc", "capacity", "--model", "fara", "--gpu", "RTX 3090", "--context", "16K"}, []string{"scaled_model  run rslyzhlpx6tot73t", "KV capacity for another model, not measured"}},
		{[]string{"calc", "prefill", "--model", "fara", "--gpu", "RTX 3090", "--context", "16K"}, []string{"scaled_model  run rslyzhlpx6tot73t", "FLOPs of a prompt token"}},
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
}
