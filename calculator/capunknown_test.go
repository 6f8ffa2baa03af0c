package calculator_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
)

// mlxGridRun is a sustained-decode grid as MLX publishes it: 3 contexts ×
// 4 concurrencies, every cell valid, and neither an output reservation
// nor a max_model_len stated.
func mlxGridRun() calculator.Run {
	r := calculator.Run{ID: "mlx", GPU: "Apple M3 Max", Engine: "mlx-lm", VRAMGB: 128, ParamsB: 8, Quantization: "4bit", WindowS: 30}
	for _, row := range []struct {
		l     int
		total [4]float64
		ttft  float64
	}{
		{0, [4]float64{62.1, 108.4, 171.0, 236.2}, 40},
		{4096, [4]float64{55.3, 90.2, 131.7, 168.5}, 610},
		{16384, [4]float64{41.8, 60.9, 78.4, 91.3}, 2890},
	} {
		for i, b := range []int{1, 2, 4, 8} {
			total := row.total[i]
			r.Decode = append(r.Decode, cell(row.l, b, calculator.CellValid, f(total), f(total/float64(b)), f(row.ttft*float64(b)), f(1000*float64(b)/total), f(float64(b)), nil, f(30)))
		}
	}
	return r
}

const capacityUnknownSays = "its KV capacity cannot be read"

func TestSpeedWithoutCapacity(t *testing.T) {
	m := fit(t, mlxGridRun())
	tests := []struct {
		name        string
		q           calculator.Query
		status      calculator.Status
		basis       calculator.Basis
		unknown     bool
		wantTotalIn [2]float64 // total tok/s within
	}{
		{"measured cell", calculator.Query{ContextTokens: 4096, Concurrency: 4}, calculator.Fits, calculator.Measured, true, [2]float64{131.7, 131.7}},
		{"between measured cells", calculator.Query{ContextTokens: 8192, Concurrency: 3}, calculator.CapacityUnknown, calculator.Interpolated, true, [2]float64{60.9, 131.7}},
		{"beyond the measured concurrency", calculator.Query{ContextTokens: 0, Concurrency: 12}, calculator.CapacityUnknown, calculator.Extrapolated, true, [2]float64{236.2, 472.4}},
		{"an output reservation asked", calculator.Query{ContextTokens: 8192, Concurrency: 3, MaxOutputTokens: 1024}, calculator.Fits, calculator.Interpolated, false, [2]float64{60.9, 131.7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := m.Decode(tt.q)
			if err != nil {
				t.Fatalf("Decode: %v, want a speed", err)
			}
			if p.Status != tt.status || p.Basis != tt.basis {
				t.Errorf("status %s basis %s, want %s %s", p.Status, p.Basis, tt.status, tt.basis)
			}
			if p.TotalTokS == nil || p.TotalTokS.Value < tt.wantTotalIn[0] || p.TotalTokS.Value > tt.wantTotalIn[1] {
				t.Errorf("total %+v, want within %v", p.TotalTokS, tt.wantTotalIn)
			}
			if p.PerRequestTokS == nil || p.TBTMs == nil {
				t.Errorf("per-request %+v TBT %+v, want both", p.PerRequestTokS, p.TBTMs)
			}
			warned := slices.ContainsFunc(msg.Texts(p.Warnings), func(w string) bool { return strings.Contains(w, capacityUnknownSays) })
			if p.Capacity.Unknown != tt.unknown || warned != tt.unknown {
				t.Errorf("capacity %+v, warnings %q: want unknown and warned = %v", p.Capacity, p.Warnings, tt.unknown)
			}
			if tt.unknown && (p.Capacity.ReservedTokens != 0 || p.Capacity.KVTokensLow != 0 || p.Capacity.MaxConcurrencyAtContext != 0) {
				t.Errorf("capacity %+v: an unknown capacity has no figures", p.Capacity)
			}
		})
	}
}

// TestCapacityQuestionsStillRefuse: what needs the KV capacity (the
// capacity answer, a plan's fleet sizing) still asks for the output
// reservation, while the grid answers every cell's speed.
func TestCapacityQuestionsStillRefuse(t *testing.T) {
	m := fit(t, mlxGridRun())
	if _, err := m.Capacity(calculator.Query{ContextTokens: 4096}); !errors.Is(err, calculator.ErrRefused) || !strings.Contains(err.Error(), "give max_output_tokens") {
		t.Errorf("Capacity: %v, want a refusal asking for max_output_tokens", err)
	}
	plan, err := m.Plan(calculator.Target{ContextTokens: 4096, MinPerRequestTokS: 10})
	if err == nil && (plan.Meets || !strings.Contains(plan.BindingDetail, "give max_output_tokens")) {
		t.Errorf("Plan: %+v, want no plan and max_output_tokens asked", plan)
	}
	if err != nil && !strings.Contains(err.Error(), "give max_output_tokens") {
		t.Errorf("Plan: %v, want max_output_tokens asked", err)
	}
	cells, _, err := m.Grid([]int{0, 4096, 16384}, []int{1, 2, 4, 8}, calculator.Query{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		if c.Refusal != nil || c.Prediction.TotalTokS == nil {
			t.Errorf("grid %d × %d: refusal %v, total %+v; want its speed", c.ContextTokens, c.Concurrency, c.Refusal, c.Prediction.TotalTokS)
		}
	}
}
