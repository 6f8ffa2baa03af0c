package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestPackages: the commands that ship (matrixd and
// loadbench) link neither package testing nor the helpers built on it
// (storetest); their synthetic runs come from storegen.
func TestBinaryLinksNoTestPackages(t *testing.T) {
	for _, pkg := range []string{".", "../loadbench"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, "github.com/matrixd/matrixd/store") {
			t.Fatalf("go list -deps %s does not list the store: %.300s", pkg, out)
		}
		for _, bad := range []string{"testing", "github.com/matrixd/matrixd/store/storetest"} {
			if slices.Contains(deps, bad) {
				t.Errorf("%s links %s", pkg, bad)
			}
		}
	}
}
