package server_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/trust"
)

// TestCrossModelCapacity: a model with no run on a GPU gets its KV
// capacity from another model's run there: that run's KV pool plus its
// model's weights less the asked model's, over the asked model's KV bytes
// per token; a model that does not fit, or that the facts do not
// describe, is a 422.
func TestCrossModelCapacity(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090").ID
	rec := e.do(t, http.MethodGet, "/v1/calculator/capacity?model=fara&gpu=RTX%203090&context_tokens=16384&concurrency=8", nil)
	var a api.CapacityEstimate
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || rec.Code != 200 {
		t.Fatalf("%d: %s", rec.Code, rec.Body)
	}
	// Nemotron's run ran 1,179,648 tokens and refused 1,310,720, at
	// 6 × 8 × 128 × 2 × 0.5 bytes (int4 KV) a token; its weights are
	// 12.3 B × 0.52 bytes (4-bit), Fara's 4.0 B × 0.52, and a token of
	// Fara's KV cache takes 8 × 4 × 256 × 2 × 0.5 bytes.
	kvNemo, kvFara, delta := 6.0*8*128*2*0.5, 8.0*4*256*2*0.5, (12.3-4.0)*0.52e9
	wantLo := int(math.Floor((1179648*kvNemo + delta - 1.5e9) / kvFara))
	wantHi := int(math.Ceil((1310720*kvNemo + delta + 1.5e9) / kvFara))
	if a.Basis.Method != api.CalcBasisMethodScaledModel || len(a.Basis.RunIDs) != 1 || a.Basis.RunIDs[0] != nemo ||
		a.KVTokensLow != wantLo || a.KVTokensHigh == nil || *a.KVTokensHigh != wantHi || a.SequenceLimit != nil {
		t.Errorf("capacity %+v (high %v, sequence limit %v), want scaled_model from %s, %d–%d tokens, no sequence limit", a, a.KVTokensHigh, a.SequenceLimit, nemo, wantLo, wantHi)
	}
	if want := wantLo / (16384 + 8192); a.MaxConcurrency != want {
		t.Errorf("max concurrency %d, want %d", a.MaxConcurrency, want)
	}
	if len(a.Warnings) < 3 || !contains(a.Warnings[0], "no run of Fara1.5-4B on RTX 3090", "run "+nemo, "as its run "+fara) ||
		!contains(a.Warnings[1], "KV capacity for another model, not measured", "less the other's (2.08 GB)") ||
		!contains(a.Warnings[2], "sequence limit is unknown") {
		t.Errorf("warnings %q, want the source run, the pool's arithmetic and the unknown sequence limit", a.Warnings)
	}
	runCases(t, e, []getCase{
		{"the other way, where little room is left", "/v1/calculator/capacity?model=nemotron&gpu=RTX%203060&context_tokens=16384", 200,
			[]string{`"method":"scaled_model"`, `"run_ids":["` + fara + `"]`, `"kv_tokens_low":0`, "at the interval's pessimistic end nothing fits"}},
		{"a model that does not fit", "/v1/calculator/capacity?model=Qwen3-14B&gpu=RTX%203060&context_tokens=16384", 422,
			[]string{`no run of Qwen3-14B on GPU \"RTX 3060\"; run ` + fara + " of Fara1.5-4B, which would answer for it, refuses", "the other model's weights (7.7 GB) do not fit",
				"leave -0.2 GB for the KV cache", "a GPU with more memory, or a smaller quantization"}},
		{"facts lack the model", "/v1/calculator/capacity?model=Falcon-40B-Instruct&gpu=RTX%203090&context_tokens=16384", 422,
			[]string{`the model facts table has no entry matching \"Falcon-40B-Instruct\"`, "ask the service's operator"}},
		{"and another VRAM size", "/v1/calculator/capacity?model=fara&gpu=RTX%203090&context_tokens=16384&vram_gb=48", 422,
			[]string{"another VRAM size is not scaled for it"}},
		{"the decode answer's capacity is the same", "/v1/calculator/decode?model=fara&gpu=RTX%203090&context_tokens=16384&concurrency=8", 200,
			[]string{`"kv_tokens_low":` + itoa(wantLo), `"kv_tokens_high":` + itoa(wantHi)}},
		{"a GPU with no run at all", "/v1/calculator/capacity?model=fara&gpu=H100&context_tokens=16384", 404,
			[]string{`no run of a model matching \"fara\" on GPU \"H100\"`}},
	})
}

// TestCrossModelPrefill: a model with no run on a GPU gets its cold
// prefill from another model's run there, scaled by the FLOPs a prompt
// token costs each (prefill is bound by compute), with a wide band.
func TestCrossModelPrefill(t *testing.T) {
	e := newEnv(t, 0)
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	rec := e.do(t, http.MethodGet, "/v1/calculator/prefill?model=fara&gpu=RTX%203090&context_tokens=16384", nil)
	var p api.PrefillPrediction
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != 200 {
		t.Fatalf("%d: %s", rec.Code, rec.Body)
	}
	facts, err := trust.ModelFacts()
	if err != nil {
		t.Fatal(err)
	}
	flops := func(name string, l float64) float64 {
		m, _ := facts.Lookup(name)
		return 2*m.ActiveParams()*1e9 + 2*float64(m.KVLayers*m.AttentionHeads*m.HeadDim)*l
	}
	var measured float64 // Nemotron's cold TTFT at 16K
	for _, c := range nemo.Prefill {
		if c.ContextTokens == 16384 && c.TTFTMs != nil {
			measured = *c.TTFTMs
		}
	}
	want := measured * flops("Fara1.5-4B", 16384) / flops("NVIDIA-Nemotron-Nano-12B-v2", 16384)
	band := calculator.PrefillModelBand
	if p.Basis.Method != api.CalcBasisMethodScaledModel || len(p.Basis.RunIDs) != 1 || p.Basis.RunIDs[0] != nemo.ID ||
		measured == 0 || math.Abs(p.TTFTMs.Value-want) > 0.01 || p.TTFTMs.Low > want*(1-band)+0.01 || p.TTFTMs.High < want*(1+band)-0.01 {
		t.Errorf("prefill %+v, want scaled_model from %s at %.3f ms ± %.0f %%", p, nemo.ID, want, 100*band)
	}
	if len(p.Warnings) < 2 || !contains(p.Warnings[0], "no run of Fara1.5-4B on RTX 3090") || !contains(p.Warnings[1], "another model, not measured", "FLOPs of a prompt token") {
		t.Errorf("warnings %q", p.Warnings)
	}
	// A mixture of experts on the RTX 3090 beside Nemotron: Qwen3.6-35B-A3B
	// has its KV geometry in the facts (its speed is answered; at 4 bits
	// its weights leave no room for a KV cache there, so a grid's cells
	// are refused) but not its attention heads (prefill is refused).
	moe := nemo
	moe.ID, moe.Title = "", "gpt-oss-20b on RTX 3090"
	moe.Model.Name, moe.Model.Quantization = "openai/gpt-oss-20b", "MXFP4"
	stored, _, err := e.st.CreateRun(context.Background(), moe)
	if err != nil {
		t.Fatal(err)
	}
	runCases(t, e, []getCase{
		{"the facts lack the heads", "/v1/calculator/prefill?model=Qwen3.6-35B-A3B&gpu=RTX%203090&context_tokens=16384", 422,
			[]string{"lacks the attention geometry (kv_layers, attention_heads, head_dim) of Qwen3.6-35B-A3B", "the service's operator can add them"}},
		{"while its speed is answered", "/v1/calculator/grid?model=Qwen3.6-35B-A3B&gpu=RTX%203090&contexts=0&concurrencies=1", 200,
			[]string{`"run_ids":["` + stored.ID + `"]`, "another model: speed scaled"}},
		{"beyond the source's prefill table", "/v1/calculator/prefill?model=fara&gpu=RTX%203090&context_tokens=1000000", 422,
			[]string{`no run of Fara1.5-4B on GPU \"RTX 3090\"; run ` + nemo.ID + " of NVIDIA-Nemotron-Nano-12B-v2, which would answer for it, refuses", "outside what this run's prefill table supports"}},
		{"facts lack the model", "/v1/calculator/prefill?model=Falcon-40B-Instruct&gpu=RTX%203090&context_tokens=16384", 422,
			[]string{`the model facts table has no entry matching \"Falcon-40B-Instruct\"`}},
		{"a model's own run is measured", "/v1/calculator/prefill?model=nemotron&gpu=RTX%203090&context_tokens=16384", 200,
			[]string{`"method":"measured"`}},
	})
}

// TestPlannerScaledModel: asked for a model, the planner adds the GPUs
// with runs of other models but none of it only with
// include_scaled_model=true, each answered from another model's run
// there as the calculator answers.
func TestPlannerScaledModel(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	const q = "/v1/planner?context_tokens=16384&min_per_request_tok_s=30&max_ttft_ms=10000&model=fara"
	rec := e.do(t, http.MethodGet, q+"&include_scaled_model=true", nil)
	var pl api.CapacityPlan
	if err := json.Unmarshal(rec.Body.Bytes(), &pl); err != nil || rec.Code != 200 {
		t.Fatalf("%d: %s", rec.Code, rec.Body)
	}
	if len(pl.Options) != 2 || pl.Options[0].RunID != fara || pl.Options[0].ScaledFromModel != nil {
		t.Fatalf("options %+v, want Fara's own run first, then one from another model's", pl.Options)
	}
	o := pl.Options[1]
	if o.Basis == nil || *o.Basis != api.PlanOptionBasisScaledModel || o.RunID != nemo.ID || o.GPU != "RTX 3090" || o.Model != "Fara1.5-4B" ||
		o.ScaledFromModel == nil || *o.ScaledFromModel != nemo.Model.Name || o.TTFTChecked || o.TTFTMs != nil || !o.Meets {
		t.Errorf("option %+v, want Fara1.5-4B on RTX 3090 from %s (scaled_model, TTFT unchecked)", o, nemo.ID)
	}
	// The option is the calculator's answer at its concurrency.
	rec = e.do(t, http.MethodGet, "/v1/calculator/decode?model=fara&gpu=RTX%203090&context_tokens=16384&concurrency="+itoa(o.Concurrency), nil)
	var p api.DecodePrediction
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != 200 {
		t.Fatalf("%d: %s", rec.Code, rec.Body)
	}
	if o.TotalTokS == nil || p.TotalTokS == nil || *o.TotalTokS != *p.TotalTokS {
		t.Errorf("planner %+v, calculator %+v at concurrency %d", o.TotalTokS, p.TotalTokS, o.Concurrency)
	}
	if len(o.Warnings) < 2 || !contains(o.Warnings[0], "no run of Fara1.5-4B on RTX 3090", "run "+nemo.ID) || !contains(o.Warnings[len(o.Warnings)-1], "the TTFT bound of 10000 ms was not applied: TTFT is not predicted for another model") {
		t.Errorf("warnings %q", o.Warnings)
	}
	runCases(t, e, []getCase{
		{"not without asking", q, 200, []string{`"run_id":"` + fara + `"`}},
		{"on the model's own GPU, its run", q + "&include_scaled_model=true&gpu=3060", 200, []string{`"run_id":"` + fara + `"`}},
		{"on one GPU", q + "&include_scaled_model=true&gpu=3090", 200, []string{`"basis":"scaled_model"`, `"scaled_from_model":"` + nemo.Model.Name + `"`}},
		{"where the facts do not tell, says why", "/v1/planner?context_tokens=16384&min_per_request_tok_s=30&model=llama&include_scaled_model=true", 200,
			[]string{`"options":[]`, "no option answered from another model's run on RTX 3090", `the model facts table has no entry matching \"llama\"`}},
		{"with an override (the newest runs, each modelled)", q + "&include_scaled_model=true&max_output_tokens=4096", 200,
			[]string{`"basis":"scaled_model"`, `"run_id":"` + nemo.ID + `"`, `"meets":true`}},
		{"without a model", "/v1/planner?context_tokens=16384&min_per_request_tok_s=30&include_scaled_model=true", 400,
			[]string{`"field":"include_scaled_model"`, "give model too"}},
		{"priced", q + "&include_scaled_model=true&gpu=3090&gpu_hour_usd=0.5", 200, []string{`"basis":"scaled_model"`, `"usd_per_hour":0.5`, `"power_source":"power_limit"`}},
	})
	for _, c := range []string{q, q + "&include_scaled_model=true&gpu=3060"} {
		if body := e.do(t, http.MethodGet, c, nil).Body.String(); contains(body, "scaled_model") {
			t.Errorf("%s: %s, want no scaled_model option", c, body)
		}
	}
}

// TestPlannerScaledGPUAndModel: asked for both, the planner lists a GPU
// with another model's run once, answered from that run as the
// calculator answers, not also scaled from the model's run on another GPU.
func TestPlannerScaledGPUAndModel(t *testing.T) {
	e := newEnv(t, 0)
	e.seed(t, "fara1.5-4b-autoround-rtx3060")
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	v := url.Values{"context_tokens": {"16384"}, "min_per_request_tok_s": {"30"}, "model": {"fara"}, "include_scaled": {"true"}, "limit": {"100"}}
	p := plan(t, e, v)
	on3090 := func(p api.CapacityPlan) (scaledGPU, scaledModel int) {
		for _, o := range p.Options {
			if o.GPU != "RTX 3090" || o.Basis == nil {
				continue
			}
			switch *o.Basis {
			case api.PlanOptionBasisScaledGPU:
				scaledGPU++
			case api.PlanOptionBasisScaledModel:
				scaledModel++
			}
		}
		return
	}
	if g, m := on3090(p); g != 1 || m != 0 {
		t.Fatalf("include_scaled alone: %d scaled_gpu and %d scaled_model options on the RTX 3090, want 1 and 0", g, m)
	}
	v.Set("include_scaled_model", "true")
	p = plan(t, e, v)
	if g, m := on3090(p); g != 0 || m != 1 {
		t.Errorf("both: %d scaled_gpu and %d scaled_model options on the RTX 3090, want 0 and 1", g, m)
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool {
		return contains(w, "Fara1.5-4B is answered from a run of "+nemo.Model.Name+" there (scaled_model)", "1 option scaling Fara1.5-4B's runs on other GPUs to it (scaled_gpu) left out")
	}) {
		t.Errorf("warnings %q, want one saying the scaled_gpu option on the RTX 3090 was left out", p.Warnings)
	}
}

// TestPlannerScaledModelUncertainCapacity: Nemotron on the RTX 3060, from
// Fara's run there, has a KV capacity of 0–590243 tokens moved from
// Fara's: whether one request fits is uncertain, and the option, which
// plans no request, has no cost.
func TestPlannerScaledModelUncertainCapacity(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	p := plan(t, e, url.Values{"context_tokens": {"16384"}, "min_per_request_tok_s": {"30"}, "model": {"nemotron"}, "include_scaled_model": {"true"}, "gpu_hour_usd": {"0.3"}})
	i := slices.IndexFunc(p.Options, func(o api.PlanOption) bool { return o.RunID == fara })
	if i < 0 {
		t.Fatalf("options %+v, want one answered from Fara's run", p.Options)
	}
	o := p.Options[i]
	if o.Meets || o.Concurrency != 0 || o.Status == nil || *o.Status != api.PlanOptionStatusBoundaryUncertain || o.Shortfall == nil {
		t.Fatalf("option %+v, want missed at a boundary_uncertain concurrency 1", o)
	}
	want := "whether even one request fits is uncertain: 1 request of 16384 tokens reserves 24576 KV tokens, within the KV capacity of 0–590243 tokens estimated here (not measured)"
	if o.Shortfall.Reason != want {
		t.Errorf("reason %q, want %q", o.Shortfall.Reason, want)
	}
	if o.Cost != nil {
		t.Errorf("an option planning no request costs %+v", *o.Cost)
	}
	if m := p.Options[0]; !m.Meets || m.Cost == nil {
		t.Errorf("Nemotron's own run %+v: met, with a cost", m)
	}
	// Measured runs that miss by speed plan no request either, and are
	// priced at the one request that runs (what their nearest try costs).
	p = plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"1000"}, "gpu_hour_usd": {"0.3"}})
	for _, o := range p.Options {
		if o.Meets || o.Cost == nil || o.Cost.USDPerHour == nil || *o.Cost.USDPerHour != 0.3 {
			t.Errorf("%s misses 1000 tok/s each (meets %v): cost %+v, want one GPU's 0.3 $/h", o.RunID, o.Meets, o.Cost)
		}
	}
}
