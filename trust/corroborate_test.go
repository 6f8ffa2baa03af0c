package trust

import (
	"strings"
	"testing"
)

// peer is a run of Llama-2-7B at 16 bits on one A100 with a 2×2 grid of
// cells, total speed base × concurrency.
func peer(id, source string, order int64, base float64) Peer {
	p := Peer{ID: id, Source: source, Order: order, Model: "llama-2-7b", GPU: "a100 80gb sxm", NamedModel: "Llama-2-7B", NamedGPU: "A100 80GB SXM",
		BandwidthGBs: 2039, ActiveParamsB: 7, EngineFamily: "vLLM", Bits: "16 bits", GPUCount: 1, Class: "sustained_decode"}
	for _, ctx := range []int{1024, 4096} {
		for _, conc := range []int{1, 4} {
			total := base * float64(conc) * (1 - float64(ctx)/20000)
			per := total / float64(conc)
			p.Cells = append(p.Cells, Cell{ContextTokens: ctx, Concurrency: conc, TotalTokS: &total, PerRequestTokS: &per})
		}
	}
	return p
}

func TestCorroborate(t *testing.T) {
	orig := peer("orig", "publisher:a", 1, 100)
	agreeing := peer("agree", "key:b", 2, 104)
	double := peer("double", "key:c", 3, 200)
	third := peer("third", "key:d", 4, 190)
	copied := peer("copied", "key:g", 8, 199)
	renamed := orig
	renamed.ID, renamed.Source, renamed.Order, renamed.Model, renamed.NamedModel = "renamed", "key:e", 5, "llama-2-13b", "Llama-2-13B"
	onH100 := peer("h100", "key:f", 6, 100*3350/2039.0)
	onH100.GPU, onH100.NamedGPU, onH100.BandwidthGBs = "h100 sxm", "H100 SXM", 3350
	// A 13B model's run whose size-scaled estimate matches the 2× copy.
	bigger := peer("bigger", "key:h", 9, 200*7/13.0)
	bigger.Model, bigger.NamedModel, bigger.ActiveParamsB = "llama-2-13b", "Llama-2-13B", 13
	sameKey := peer("samekey", "publisher:a", 7, 100)
	sameKey.Cells = peer("", "", 0, 150).Cells

	bounds := Bounds()
	tests := []struct {
		name        string
		run         Peer
		peers       []Peer
		wantStatus  string
		wantSources int
		wantDetail  []string
	}{
		{"no reference", orig, []Peer{orig}, StatusUncorroborated, 0, []string{"No independent run"}},
		{"a run of its own source is no reference", sameKey, []Peer{orig, sameKey}, StatusUncorroborated, 0, nil},
		{"an agreeing independent run corroborates", agreeing, []Peer{orig, agreeing}, StatusCorroborated, 1, []string{"Agrees with 1 independent source", "run orig"}},
		{"a 2× copy from a second key is disputed", double, []Peer{orig, double}, StatusDisputed, 0, []string{"2×", "run orig", "total tok/s"}},
		{"a third source agreeing lifts the dispute", double, []Peer{orig, double, third}, StatusCorroborated, 1, []string{"1 source disputes it, outweighed"}},
		{"another model's estimate agreeing does not outweigh a measurement", double, []Peer{orig, double, bigger}, StatusDisputed, 0, []string{"run orig"}},
		{"another model's estimate corroborates where nothing else speaks", double, []Peer{double, bigger}, StatusCorroborated, 1, []string{"the nearest speed 1 run of Llama-2-13B allows"}},
		{"a near-copy agreeing does not lift it", double, []Peer{orig, double, copied}, StatusDisputed, 0, []string{"run orig"}},
		{"two sources outweigh the original", orig, []Peer{orig, double, third}, StatusDisputed, 0, []string{"2 independent sources"}},
		{"the estimate from another GPU corroborates", onH100, []Peer{orig, onH100}, StatusCorroborated, 1, []string{"the nearest speed 1 run on A100 80GB SXM allows"}},
		{"a renamed copy is disputed as a copy of the earliest", renamed, []Peer{orig, agreeing, renamed}, StatusDisputed, 0, []string{"A copy of run orig (Llama-2-7B on A100 80GB SXM)"}},
		{"the original of a renamed copy is not a copy", orig, []Peer{orig, renamed}, StatusUncorroborated, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Corroborate(tt.run, tt.peers, bounds)
			if got.Status != tt.wantStatus || got.Sources != tt.wantSources {
				t.Fatalf("status %s with %d sources, want %s with %d: %s", got.Status, got.Sources, tt.wantStatus, tt.wantSources, got.Detail)
			}
			for _, w := range tt.wantDetail {
				if !strings.Contains(got.Detail, w) {
					t.Errorf("detail %q lacks %q", got.Detail, w)
				}
			}
		})
	}
}

// TestCorroborateCrossGPURange: a run on another GPU is held to the range
// from the reference's speed to its speed scaled by memory bandwidth, not
// to the scaled point: a small model decoding one request is bound by
// overheads, not bandwidth (a published gpt-oss-20b sweep reads 1.35× on a
// B200 what it reads on an H100 PCIe, whose bandwidth is 3.85× less).
func TestCorroborateCrossGPURange(t *testing.T) {
	onGPU := func(id, source, gpu string, bw, base float64) Peer {
		p := peer(id, source, 1, base)
		p.GPU, p.NamedGPU, p.BandwidthGBs = gpu, gpu, bw
		return p
	}
	h100 := onGPU("h100", "publisher:a", "h100 pcie", 2000, 100)
	for _, tc := range []struct {
		name string
		run  Peer
		want string
	}{
		{"a faster GPU gaining less than its bandwidth", onGPU("b200", "key:b", "b200", 7700, 135), StatusCorroborated},
		// 1.25 below the range: neither close enough to agree nor far
		// enough to dispute.
		{"a faster GPU slower than the reference", onGPU("mi300x", "key:c", "mi300x", 5300, 80), StatusUncorroborated},
		{"10× on a faster GPU", onGPU("fake", "key:d", "b200", 7700, 1350), StatusDisputed},
		{"a slower GPU 5× faster than the faster one", onGPU("fake2", "key:e", "l4", 300, 500), StatusDisputed},
	} {
		if c := Corroborate(tc.run, []Peer{h100, tc.run}, Bounds()); c.Status != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, c.Status, c.Detail, tc.want)
		}
	}
}

// TestCorroborateLayouts: runs of one model on the same GPUs in another
// parallel layout are no reference of each other (tensor parallel 2
// decodes 1.7× as fast per request as pipeline parallel 2 on two L40S).
func TestCorroborateLayouts(t *testing.T) {
	tp := peer("tp2", "publisher:a", 1, 170)
	pp := peer("pp2", "key:b", 2, 100)
	tp.GPUCount, tp.Split = 2, 2
	pp.GPUCount, pp.Split = 2, 1
	if Related(tp, pp) {
		t.Fatal("tensor parallel 2 and pipeline parallel 2 are related")
	}
	if c := Corroborate(pp, []Peer{tp, pp}, Bounds()); c.Status != StatusUncorroborated {
		t.Errorf("pipeline run beside a tensor-parallel one: %s (%s), want uncorroborated", c.Status, c.Detail)
	}
	pp.Split = 2
	if c := Corroborate(pp, []Peer{tp, pp}, Bounds()); c.Status != StatusDisputed {
		t.Errorf("the same cells in one layout: %s, want disputed (1.7×)", c.Status)
	}
}

func TestCorroborateTBTDoctored(t *testing.T) {
	orig := peer("orig", "publisher:a", 1, 100)
	bad := peer("bad", "key:b", 2, 100)
	for i := range bad.Cells {
		v := *bad.Cells[i].PerRequestTokS * 20
		bad.Cells[i].PerRequestTokS = &v
	}
	got := Corroborate(bad, []Peer{orig, bad}, Bounds())
	if got.Status != StatusDisputed || !strings.Contains(got.Detail, "per-request tok/s is 20×") {
		t.Fatalf("status %s: %s", got.Status, got.Detail)
	}
}
