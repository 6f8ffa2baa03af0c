package calculator

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestMoveOf: a question's move is the furthest it asks, and the answer's
// basis says it; only the run as measured keeps the speed's own basis.
func TestMoveOf(t *testing.T) {
	for _, tc := range []struct {
		gpu, vram, other bool
		want             move
		basis            Basis
		sameRun, keeps   bool
	}{
		{want: moveNone, basis: Interpolated, sameRun: true, keeps: true},
		{vram: true, want: moveVRAM, basis: ScaledVRAM, keeps: true},
		{gpu: true, want: moveGPU, basis: ScaledGPU},
		{gpu: true, vram: true, want: moveGPU, basis: ScaledGPU},
		{other: true, want: moveModel, basis: ScaledModel},
	} {
		mv := moveOf(gpuScaling{scaled: tc.gpu}, vramScaling{scaled: tc.vram}, tc.other)
		if mv != tc.want || mv.basis(Interpolated) != tc.basis || mv.sameRun() != tc.sameRun || mv.keepsSpeed() != tc.keeps || mv.movesSpeed() == tc.keeps {
			t.Errorf("gpu %t, vram %t, other %t: move %d (basis %s, same run %t, keeps speed %t, moves speed %t), want %d (%s, %t, %t, %t)",
				tc.gpu, tc.vram, tc.other, mv, mv.basis(Interpolated), mv.sameRun(), mv.keepsSpeed(), mv.movesSpeed(), tc.want, tc.basis, tc.sameRun, tc.keeps, !tc.keeps)
		}
	}
}

// TestReachRefusals: the run answers up to its reach and refuses just
// past it, and each refusal states the reach the code applied.
func TestReachRefusals(t *testing.T) {
	r := Run{ID: "reach", GPU: "RTX 3090", Engine: "vllm", MaxOutputTokens: 256}
	for _, l := range []int{1024, 2048, 4096} {
		for _, b := range []int{1, 2, 4, 8} {
			tbt := 10 + 0.4*float64(b) + 0.002*float64(l)
			total := float64(b) * 1000 / tbt
			r.Decode = append(r.Decode, Cell{ContextTokens: l, Concurrency: b, Status: CellValid, TotalTokS: &total, TBTMs: &tbt})
		}
	}
	m, err := Fit(r)
	if err != nil {
		t.Fatal(err)
	}
	shortest := shortestReach * 1024.0 // a variable: not a whole number of tokens
	for _, tc := range []struct {
		name      string
		l, b      int
		refused   bool
		wantReach float64
	}{
		{"longest reach", int(longestReach * 4096), 4, false, 0},
		{"past the longest reach", int(longestReach*4096) + 1, 4, true, longestReach},
		{"shortest reach", int(shortest) + 1, 4, false, 0},
		{"below the shortest reach", int(shortest), 4, true, shortestReach},
		{"concurrency reach", 2048, int(concurrencyReach * 8), false, 0},
		{"past the concurrency reach", 2048, int(concurrencyReach*8) + 1, true, concurrencyReach},
	} {
		_, err := m.Decode(Query{ContextTokens: tc.l, Concurrency: tc.b})
		var ref *Refusal
		switch {
		case !tc.refused && err != nil:
			t.Errorf("%s (%d × %d): %v, want an answer", tc.name, tc.l, tc.b, err)
		case tc.refused && !errors.As(err, &ref):
			t.Errorf("%s (%d × %d): %v, want a refusal", tc.name, tc.l, tc.b, err)
		case tc.refused && !strings.Contains(ref.Reason, fmt.Sprintf(" %g× ", tc.wantReach)):
			t.Errorf("%s (%d × %d): %q does not say the reach %g×", tc.name, tc.l, tc.b, ref.Reason, tc.wantReach)
		case tc.refused && !strings.Contains(ref.Supported, fmt.Sprintf("up to %g× the largest", concurrencyReach)):
			t.Errorf("%s: supported %q does not say the concurrency reach %g×", tc.name, ref.Supported, concurrencyReach)
		}
	}
}
