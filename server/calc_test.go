package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
)

func TestCalculatorAPI(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090").ID
	// A second Fara run on the RTX 3060 with another KV-cache dtype: not the
	// same speed surface, so model+gpu must not silently pick one.
	other := fara
	other.ID, other.Title = "", fara.Title+" (fp8 KV)"
	other.Launch.KVCacheDtype = "fp8"
	other.Launch.Flags = maps.Clone(fara.Launch.Flags)
	other.Launch.Flags["kv-cache-dtype"] = "fp8"
	stored, _, err := e.st.CreateRun(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	tests := []getCase{
		{"measured cell", "/v1/calculator/decode?run_id=" + fara.ID + "&context_tokens=16384&concurrency=8", 200,
			[]string{`"status":"fits"`, `"method":"measured"`, `"total_tok_s":{"high":279.15,"low":279.05,"value":279.1}`, `"tbt_ms":{"high":32.05,"low":31.95,"value":32}`}},
		{"interpolated", "/v1/calculator/decode?run_id=" + fara.ID + "&context_tokens=49152&concurrency=6", 200,
			[]string{`"method":"interpolated"`, `"error_band_pct":{`, `"run_ids":["` + fara.ID + `"]`}},
		{"extrapolated", "/v1/calculator/decode?run_id=" + fara.ID + "&context_tokens=16384&concurrency=24", 200,
			[]string{`"method":"extrapolated"`, `"status":"fits"`}},
		{"over capacity has no speed", "/v1/calculator/decode?run_id=" + fara.ID + "&context_tokens=49152&concurrency=32", 200,
			[]string{`"status":"over_capacity"`, `"total_tok_s":null`, `"method":"none"`}},
		{"248K ran without a token", "/v1/calculator/decode?run_id=" + fara.ID + "&context_tokens=253952&concurrency=1", 200,
			[]string{`"status":"ttft_exceeds_window"`}},
		{"hybrid sequence limit", "/v1/calculator/decode?run_id=" + nemo + "&context_tokens=0&concurrency=100", 200,
			[]string{`"status":"requests_queued"`, `"sequence_limit":67`}},
		{"other vram", "/v1/calculator/decode?run_id=" + fara.ID + "&context_tokens=16384&concurrency=32&vram_gb=24", 200,
			[]string{`"method":"scaled_vram"`, `"speed_method":"extrapolated"`}},
		{"another gpu", "/v1/calculator/decode?run_id=" + nemo + "&context_tokens=32768&concurrency=4&target_gpu=RTX%203080", 200,
			[]string{`"method":"scaled_gpu"`, `"speed_method":"measured"`, `"ttft_ms":null`, "936 GB/s"}},
		{"another gpu that the weights fill", "/v1/calculator/decode?run_id=" + nemo + "&context_tokens=16384&concurrency=8&target_gpu=RTX%20A2000", 422,
			[]string{"RTX A2000: 6.0 GB × 0.94 = 5.6 GB leaves no room for the KV cache after 6.2 GB of weights and up to 0.5 GB of runtime overhead", "more than 7.2 GB of VRAM"}},
		{"a grid on a gpu that the weights fill", "/v1/calculator/grid?run_id=" + nemo + "&contexts=16384&concurrencies=8&target_gpu=RTX%20A2000", 422,
			[]string{"leaves no room for the KV cache"}},
		{"another generation refused", "/v1/calculator/decode?run_id=" + nemo + "&context_tokens=32768&concurrency=4&target_gpu=H100", 422,
			[]string{"different GPU generations", "rough=true"}},
		{"another generation rough", "/v1/calculator/decode?run_id=" + nemo + "&context_tokens=32768&concurrency=4&target_gpu=H100&rough=true", 200,
			[]string{`"method":"scaled_gpu"`, `"error_band_pct":{"tbt_ms":` + strconv.FormatFloat(100*calculator.Calibration().GPUMoveFor("vllm").RoughBand, 'f', -1, 64)}},
		{"by model and gpu", "/v1/calculator/decode?model=nemotron&gpu=RTX%203090&context_tokens=32768&concurrency=4", 200,
			[]string{`"run_ids":["` + nemo + `"]`, `"method":"measured"`}},
		{"max_num_seqs queues", "/v1/calculator/decode?run_id=" + fara.ID + "&context_tokens=0&concurrency=200&vram_gb=48", 200,
			[]string{`"status":"requests_queued"`, "max-num-seqs 128"}},
		{"shorter output frees capacity", "/v1/calculator/decode?run_id=" + fara.ID + "&context_tokens=16384&concurrency=30&max_output_tokens=1024", 200,
			[]string{`"status":"fits"`, `"reserved_tokens":522240`}},
		{"refused concurrency", "/v1/calculator/decode?run_id=" + fara.ID + "&context_tokens=16384&concurrency=40&vram_gb=48", 422,
			[]string{"beyond 2×", `"supported":"context 0–`}},
		{"ambiguous model+gpu", "/v1/calculator/decode?model=fara&gpu=rtx%203060&context_tokens=0&concurrency=1", 422,
			[]string{`"candidates":[`, stored.ID, fara.ID, "differ in kv_cache_dtype", "pick one with run_id, or narrow with kv_cache_dtype\""}},
		{"narrowed model+gpu", "/v1/calculator/decode?model=fara&gpu=rtx%203060&kv_cache_dtype=fp8&context_tokens=0&concurrency=1", 200,
			[]string{`"run_ids":["` + stored.ID + `"]`}},
		{"no such model, and no facts to scale another's run", "/v1/calculator/decode?model=llama&gpu=RTX%203090&context_tokens=0&concurrency=1", 422,
			[]string{`no run of a model matching \"llama\" is stored on GPU \"RTX 3090\"`, `the model facts table has no entry matching \"llama\"`, "GET /v1/model-facts", "ask the service's operator to add it to the table"}},
		{"no run on the GPU at all", "/v1/calculator/decode?model=fara&gpu=H100&context_tokens=0&concurrency=1", 404, []string{`no run of a model matching \"fara\" on GPU \"H100\"`}},
		{"unknown run", "/v1/calculator/decode?run_id=rnope&context_tokens=0&concurrency=1", 404, []string{"rnope does not exist"}},
		{"both selections", "/v1/calculator/decode?run_id=" + nemo + "&model=x&gpu=y&context_tokens=0&concurrency=1", 400, []string{`"field":"run_id"`}},
		{"no selection", "/v1/calculator/decode?context_tokens=0&concurrency=1", 400, []string{"select a run"}},
		{"model without gpu", "/v1/calculator/decode?model=nemo&context_tokens=0&concurrency=1", 400, []string{`"field":"gpu"`}},
		{"missing concurrency", "/v1/calculator/decode?run_id=" + nemo + "&context_tokens=0", 400, []string{`"field":"concurrency"`}},
		{"bad utilization", "/v1/calculator/decode?run_id=" + nemo + "&context_tokens=0&concurrency=1&gpu_memory_utilization=2", 400, []string{`"field":"gpu_memory_utilization"`}},
		{"context too long to read", "/v1/calculator/decode?run_id=" + nemo + "&context_tokens=99999999999999999999&concurrency=1", 400,
			[]string{`"field":"context_tokens","message":"number must be at most 16777216"`}},
		{"context too negative to read", "/v1/calculator/decode?run_id=" + nemo + "&context_tokens=-99999999999999999999&concurrency=1", 400,
			[]string{`"field":"context_tokens","message":"number must be at least 0"`}},

		{"capacity", "/v1/calculator/capacity?run_id=" + fara.ID + "&context_tokens=16384&concurrency=8", 200,
			[]string{`"kv_tokens_low":655360`, `"kv_tokens_high":786432`, `"max_concurrency":26`, `"max_context_tokens":73728`}},
		{"capacity scaled", "/v1/calculator/capacity?run_id=" + fara.ID + "&context_tokens=16384&vram_gb=16", 200, []string{`"method":"scaled_vram"`, `"concurrency":null`}},
		{"capacity held by max-num-seqs", "/v1/calculator/capacity?run_id=" + fara.ID + "&context_tokens=16384&target_gpu=H100", 200,
			[]string{`"max_concurrency":128`, `the KV cache holds about 222 requests of 24576 tokens (context + max output) here, but the engine runs at most --max-num-seqs 128 at once`}},
		{"capacity vram too small", "/v1/calculator/capacity?run_id=" + fara.ID + "&context_tokens=16384&vram_gb=2", 422, []string{"no room for the KV cache"}},

		{"grid default axes", "/v1/calculator/grid?run_id=" + fara.ID, 200, []string{`"contexts":[0,16384,32768,65536,131072,253952]`, `"method":"measured"`}},
		{"grid with refusals", "/v1/calculator/grid?run_id=" + fara.ID + "&contexts=49152,204800&concurrencies=1,6", 200,
			[]string{`"status":"refused"`, `"refusal":"context 204800 tokens is beyond`, `"method":"interpolated"`}},
		{"grid too big", "/v1/calculator/grid?run_id=" + fara.ID + "&contexts=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", 400, []string{`"field":"contexts"`}},
		{"grid on another VRAM size says so", "/v1/calculator/grid?run_id=" + fara.ID + "&contexts=20000&concurrencies=8&vram_gb=48", 200,
			[]string{`"method":"scaled_vram"`, "low confidence: the KV pool differs", "another VRAM size of the same GPU changes capacity, not speed"}},
		{"grid on a rough GPU says so", "/v1/calculator/grid?run_id=" + fara.ID + "&contexts=20000&concurrencies=8&target_gpu=H100&rough=true", 200,
			[]string{`"method":"scaled_gpu"`, "rough"}},

		{"prefill measured", "/v1/calculator/prefill?run_id=" + nemo + "&context_tokens=8192", 200, []string{`"method":"measured"`, `"value":2338`}},
		{"prefill interpolated", "/v1/calculator/prefill?run_id=" + nemo + "&context_tokens=100000", 200, []string{`"method":"interpolated"`}},
		{"prefill beyond", "/v1/calculator/prefill?run_id=" + nemo + "&context_tokens=200000", 422, []string{"outside what this run's prefill table supports"}},
		{"a list item that is not a number", "/v1/calculator/grid?run_id=" + nemo + "&contexts=16K&concurrencies=1", 400,
			[]string{`"field":"contexts"`, `"message":"an invalid integer: 16K"`}},
		{"a list item that is not a whole number", "/v1/calculator/grid?run_id=" + nemo + "&contexts=1024&concurrencies=1.5", 400,
			[]string{`"field":"concurrencies"`, `"message":"an invalid integer: 1.5"`}},
		{"prefill of a prompt fixed costs dominate", "/v1/calculator/prefill?run_id=" + nemo + "&context_tokens=1", 422, []string{"from half its shortest prefill, 8192 tokens", `"supported":"context 4096–`}},
		{"prefill at half the shortest", "/v1/calculator/prefill?run_id=" + nemo + "&context_tokens=4096", 200, []string{`"method":"extrapolated"`, "below the shortest measured prefill"}},
	}
	runCases(t, e, tests)
}

// TestCrossModelSourceAmongManyRuns: the source of another model's answer
// is chosen among the models on the GPU, not among its newest runs: many
// newer runs of one model crowd out none of the others.
func TestCrossModelSourceAmongManyRuns(t *testing.T) {
	e := newEnv(t, 0)
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	ctx := context.Background()
	for i := range 55 {
		r := nemo
		r.ID, r.CreatedAt, r.Model.Name, r.Title = "", time.Time{}, "Llama-2-13B-AWQ", fmt.Sprintf("Llama-2-13B on RTX 3090, take %d", i)
		r.Launch.Notes = []string{fmt.Sprintf("take %d", i)} // a run of its own
		stored, _, err := e.st.CreateRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Trust != nil && stored.Trust.Flagged {
			t.Fatalf("the copies must not be flagged (flagged runs are never a source): %+v", stored.Trust.Flags)
		}
	}
	// Fara (4 B) is nearer Nemotron (12.3 B) than Llama-2-13B (13.0 B).
	rec := e.do(t, http.MethodGet, "/v1/calculator/decode?model=fara&gpu=RTX%203090&context_tokens=16384&concurrency=8", nil)
	var p api.DecodePrediction
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != 200 {
		t.Fatalf("%d: %s", rec.Code, rec.Body)
	}
	if p.Basis.Method != api.CalcBasisMethodScaledModel || len(p.Basis.RunIDs) != 1 || p.Basis.RunIDs[0] != nemo.ID {
		t.Errorf("answered from %v (%s), want Nemotron's run %s, the nearest model in size, under 55 newer runs of Llama-2-13B", p.Basis.RunIDs, p.Basis.Method, nemo.ID)
	}
}

// TestCrossModelDecode: a model with no run on a GPU is answered from the
// run of another model of its kind there, with the band measured moving
// published grids between models; where the facts do not tell, 422.
func TestCrossModelDecode(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090").ID
	rec := e.do(t, http.MethodGet, "/v1/calculator/decode?model=fara&gpu=RTX%203090&context_tokens=16384&concurrency=8", nil)
	var p api.DecodePrediction
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != 200 {
		t.Fatalf("%d: %s", rec.Code, rec.Body)
	}
	band := 100 * calculator.Calibration().ModelMoveFor("vllm").Band
	if p.Basis.Method != api.CalcBasisMethodScaledModel || len(p.Basis.RunIDs) != 1 || p.Basis.RunIDs[0] != nemo ||
		p.Basis.ErrorBandPct == nil || p.Basis.ErrorBandPct.TotalTokS != band || p.TTFTMs != nil {
		t.Errorf("basis %+v, ttft %v; want scaled_model from %s at ±%v %%, no TTFT", p.Basis, p.TTFTMs, nemo, band)
	}
	if v := p.TotalTokS; v == nil || v.Low > v.Value*(1-band/100)+0.01 || v.High < v.Value*(1+band/100)-0.01 {
		t.Errorf("total %+v, want at least ±%v %%", v, band)
	}
	if len(p.Warnings) == 0 || !contains(p.Warnings[0], "no run of Fara1.5-4B on RTX 3090", "run "+nemo+" of NVIDIA-Nemotron-Nano-12B-v2", "as its run "+fara) {
		t.Errorf("warnings %q, want the first naming both models and the runs", p.Warnings)
	}
	runCases(t, e, []getCase{
		{"grid", "/v1/calculator/grid?model=nemotron&gpu=RTX%203060&contexts=16384&concurrencies=8,16", 200,
			[]string{`"method":"scaled_model"`, `"run_ids":["` + fara + `"]`, "no run of NVIDIA-Nemotron-Nano-12B-v2 on RTX 3060", "another model: speed scaled"}},
		{"with a price", "/v1/calculator/decode?model=fara&gpu=3090&context_tokens=16384&concurrency=8&gpu_hour_usd=0.5", 200,
			[]string{`"method":"scaled_model"`, `"usd_per_hour":0.5`}},
		{"facts lack the model", "/v1/calculator/decode?model=Falcon-40B-Instruct&gpu=RTX%203090&context_tokens=16384&concurrency=8", 422,
			[]string{`the model facts table has no entry matching \"Falcon-40B-Instruct\"`, "cyankiwi/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit", "ask the service's operator to add it to the table", "The model facts table, says how"}},
		{"another kind", "/v1/calculator/decode?model=gpt-oss-20b&gpu=RTX%203090&context_tokens=16384&concurrency=8", 422,
			[]string{"NVIDIA-Nemotron-Nano-12B-v2 and gpt-oss-20b are not of one kind"}},
		{"and another VRAM size", "/v1/calculator/decode?model=fara&gpu=RTX%203090&context_tokens=16384&concurrency=8&vram_gb=48", 422,
			[]string{"another VRAM size is not scaled"}},
		{"and another GPU generation", "/v1/calculator/decode?model=fara&gpu=RTX%203090&context_tokens=16384&concurrency=8&target_gpu=H100", 422,
			[]string{"another model and another GPU at once are not predicted"}},
		{"and another GPU generation, rough", "/v1/calculator/decode?model=fara&gpu=RTX%203090&context_tokens=16384&concurrency=8&target_gpu=H100&rough=true", 422,
			[]string{"another model and another GPU at once are not predicted"}},
	})
}

// TestCrossModelNearest: of two runs of other models on the GPU, the one
// closest in active parameters to the asked model answers.
func TestCrossModelNearest(t *testing.T) {
	e := newEnv(t, 0)
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	// Qwen3-8B (8.2 B) on the RTX 3090 beside Nemotron Nano (12.3 B): for
	// Llama-3-8B (8.03 B) the nearer.
	qwen := nemo
	qwen.ID, qwen.Title = "", "Qwen3-8B AWQ on RTX 3090"
	qwen.Model.Name = "Qwen/Qwen3-8B-AWQ"
	stored, _, err := e.st.CreateRun(context.Background(), qwen)
	if err != nil {
		t.Fatal(err)
	}
	runCases(t, e, []getCase{
		{"the nearer model", "/v1/calculator/decode?model=Llama-3-8B&gpu=RTX%203090&context_tokens=16384&concurrency=8", 200,
			[]string{`"method":"scaled_model"`, `"run_ids":["` + stored.ID + `"]`, "answered from run " + stored.ID + " of Qwen3-8B",
				"at the source run's quantization (AWQ 4-bit), as Llama-3-8B states none"}},
		{"a model of the GPU is its own answer", "/v1/calculator/decode?model=Qwen3-8B&gpu=RTX%203090&context_tokens=16384&concurrency=8", 200,
			[]string{`"method":"measured"`, `"run_ids":["` + stored.ID + `"]`}},
	})
	// Asked by a name the facts give it (Llama-3-8B) that no run's name
	// contains, a model stored on the GPU under another (Meta-Llama-3.1-8B)
	// is never scaled onto itself: the answer says which name to ask with.
	llama := nemo
	llama.ID, llama.Title = "", "Llama 3.1 8B on RTX 3090"
	llama.Model.Name = "meta-llama/Meta-Llama-3.1-8B-Instruct"
	if _, _, err := e.st.CreateRun(context.Background(), llama); err != nil {
		t.Fatal(err)
	}
	runCases(t, e, []getCase{
		{"the model under another name", "/v1/calculator/decode?model=Llama-3-8B&gpu=RTX%203090&context_tokens=16384&concurrency=8", 422,
			[]string{"runs of Llama-3-8B are stored on GPU", "meta-llama/Meta-Llama-3.1-8B-Instruct", "ask with model set to one of those names"}},
	})
}

// TestSpeedAnswersWithoutCapacity stores a grid as MLX publishes it (12
// valid cells, no output reservation, no max_model_len): its speed is
// answered at every cell, measured or not, with the capacity unknown and
// a warning, while the capacity question still asks for max_output_tokens.
func TestSpeedAnswersWithoutCapacity(t *testing.T) {
	e := newEnv(t, 0)
	mlx := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	mlx.ID, mlx.Title = "", "MLX grid without an output reservation"
	mlx.Engine.Name, mlx.Engine.Version = "mlx-lm", "0.26.0"
	mlx.Benchmark.MaxOutputTokens, mlx.Launch = nil, store.Launch{}
	mlx.Decode = nil
	for i, l := range []int{0, 4096, 16384} {
		for j, b := range []int{1, 2, 4, 8} {
			total := (62 - 10*float64(i)) * float64(b) / (1 + 0.15*float64(j)*float64(i+1))
			mlx.Decode = append(mlx.Decode, store.DecodeCell{ContextTokens: l, Concurrency: b, Status: store.StatusValid,
				TotalTokS: f64(total), PerRequestTokS: f64(total / float64(b)), TBTMs: f64(1000 * float64(b) / total)})
		}
	}
	stored, _, err := e.st.CreateRun(context.Background(), mlx)
	if err != nil {
		t.Fatal(err)
	}
	id := stored.ID
	for _, l := range []int{0, 4096, 16384} {
		for _, b := range []int{1, 2, 4, 8} {
			rec := e.do(t, http.MethodGet, "/v1/calculator/decode?run_id="+id+"&context_tokens="+itoa(l)+"&concurrency="+itoa(b), nil)
			var p api.DecodePrediction
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != http.StatusOK {
				t.Fatalf("%d × %d: %d %s", l, b, rec.Code, rec.Body)
			}
			if p.TotalTokS == nil || p.Capacity.KVTokensLow != nil || p.Capacity.MaxConcurrencyAtContext != nil ||
				!slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "its KV capacity cannot be read") }) {
				t.Errorf("%d × %d: total %+v capacity %+v warnings %q; want a speed, no capacity figures and the warning", l, b, p.TotalTokS, p.Capacity, p.Warnings)
			}
		}
	}
	runCases(t, e, []getCase{
		{"between measured cells", "/v1/calculator/decode?run_id=" + id + "&context_tokens=8192&concurrency=3", 200,
			[]string{`"status":"capacity_unknown"`, `"method":"interpolated"`, `"total_tok_s":{`, `"kv_tokens_low":null`, `"max_concurrency_at_context":null`, "give max_output_tokens for the capacity"}},
		{"with an output reservation the capacity is read", "/v1/calculator/decode?run_id=" + id + "&context_tokens=8192&concurrency=3&max_output_tokens=1024", 200,
			[]string{`"status":"fits"`, `"kv_tokens_low":`}},
		{"the grid answers every cell", "/v1/calculator/grid?run_id=" + id + "&contexts=0,8192&concurrencies=3,8", 200,
			[]string{`"status":"capacity_unknown"`, `"method":"interpolated"`, "its KV capacity cannot be read"}},
		{"capacity still needs the reservation", "/v1/calculator/capacity?run_id=" + id + "&context_tokens=4096", 422, []string{"give max_output_tokens"}},
	})
	// The calculator page: the capacity a dash, with why in the reader's
	// language.
	for lang, want := range map[string][]string{
		"en":      {"capacity unknown", `<dd data-out="capacity">— unknown: the run does not say how many output tokens each request reserves`},
		"th":      {"ไม่ทราบความจุ", `<dd data-out="capacity">— ไม่ทราบ: การรันนี้ไม่ได้ระบุ`},
		"zh-Hant": {"容量未知", `<dd data-out="capacity">— 未知：此執行未說明`},
	} {
		body := e.page(t, "/calculator?run_id="+id+"&context_tokens=8192&concurrency=3&lang="+lang, "/v1/calculator/decode").Body.String()
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("page in %s lacks %s", lang, w)
			}
		}
	}
	if rec := e.page(t, "/calculator?run_id="+id+"&context_tokens=8192&concurrency=3&max_output_tokens=1024", "/v1/calculator/decode"); strings.Contains(rec.Body.String(), `data-out="capacity"`) {
		t.Errorf("a capacity that is read shows no dash: %.400s", rec.Body)
	}
	if rec := e.do(t, http.MethodGet, "/v1/calculator/grid?run_id="+id, nil); strings.Contains(rec.Body.String(), `"status":"refused"`) {
		t.Errorf("grid refuses cells: %.800s", rec.Body)
	}
}

// TestCalculatorAnswersMatchEveryMeasuredCell asks the decode endpoint for
// every published cell of both seeds.
func TestCalculatorAnswersMatchEveryMeasuredCell(t *testing.T) {
	e := newEnv(t, 0)
	for _, run := range e.seeds {
		for _, c := range run.Decode {
			if c.TotalTokS == nil {
				continue
			}
			rec := e.do(t, http.MethodGet, "/v1/calculator/decode?run_id="+run.ID+"&context_tokens="+itoa(c.ContextTokens)+"&concurrency="+itoa(c.Concurrency), nil)
			var p api.DecodePrediction
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != 200 {
				t.Fatalf("%d: %s", rec.Code, rec.Body)
			}
			if p.TotalTokS.Value != *c.TotalTokS || p.Basis.Method != "measured" {
				t.Errorf("%s %d×%d: %v (%s), measured %v", run.ID, c.ContextTokens, c.Concurrency, p.TotalTokS.Value, p.Basis.Method, *c.TotalTokS)
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestCalculatorOnDegenerateRuns stores runs with gaps and zeros that a
// careless calculator turns into 500s (division by zero, +Inf in JSON).
func TestCalculatorOnDegenerateRuns(t *testing.T) {
	e := newEnv(t, 0)
	ctx := context.Background()
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")

	noMaxOut := fara
	noMaxOut.Title, noMaxOut.Benchmark.MaxOutputTokens = "no max output", nil
	zeros := fara
	zeros.Title = "zeros"
	zeros.Decode = append([]store.DecodeCell(nil), fara.Decode...)
	zeros.Decode[2].TBTMs = f64(0)
	zeros.Prefill = append([]store.PrefillCell(nil), fara.Prefill...)
	zeros.Prefill[0].TTFTMs, zeros.Prefill[0].PromptTokS = f64(0), f64(0)
	noZeroRow := fara
	noZeroRow.Title = "no context-0 row"
	noZeroRow.Decode = nil
	for _, c := range fara.Decode {
		if c.ContextTokens > 0 {
			noZeroRow.Decode = append(noZeroRow.Decode, c)
		}
	}
	// 17 measured contexts: more than a grid takes by default.
	wide := fara
	wide.Title, wide.Decode = "17 contexts", nil
	for i := range 17 {
		tbt := 12 + float64(i)
		wide.Decode = append(wide.Decode, store.DecodeCell{ContextTokens: i * 4096, Concurrency: 1, Status: store.StatusValid,
			TotalTokS: f64(1000 / tbt), PerRequestTokS: f64(1000 / tbt), TBTMs: f64(tbt)})
	}
	smaller := nemo
	smaller.Title, smaller.Model.Name = "9B", "cyankiwi/NVIDIA-Nemotron-Nano-9B-v2-AWQ-4bit"
	ids := map[string]string{}
	for _, r := range []store.Run{noMaxOut, zeros, noZeroRow, smaller, wide} {
		r.ID = ""
		stored, _, err := e.st.CreateRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		ids[r.Title] = stored.ID
	}
	tests := []getCase{
		{"no max output: decode", "/v1/calculator/decode?run_id=" + ids["no max output"] + "&context_tokens=0&concurrency=3", 200,
			[]string{`"status":"capacity_unknown"`, `"reserved_tokens":null`, "its KV capacity cannot be read"}},
		{"no max output: capacity", "/v1/calculator/capacity?run_id=" + ids["no max output"] + "&context_tokens=0", 422, []string{"give max_output_tokens"}},
		{"no max output: grid", "/v1/calculator/grid?run_id=" + ids["no max output"], 200, []string{"its KV capacity cannot be read"}},
		{"no max output given", "/v1/calculator/decode?run_id=" + ids["no max output"] + "&context_tokens=0&concurrency=3&max_output_tokens=8192", 200, []string{`"status":"fits"`}},
		{"zero TBT cell", "/v1/calculator/decode?run_id=" + ids["zeros"] + "&context_tokens=0&concurrency=4&max_output_tokens=4096", 200, []string{`"method":"interpolated"`}},
		{"zero TBT cell, other VRAM", "/v1/calculator/decode?run_id=" + ids["zeros"] + "&context_tokens=0&concurrency=4&vram_gb=16", 200, nil},
		{"zero TTFT prefill", "/v1/calculator/prefill?run_id=" + ids["zeros"] + "&context_tokens=8192", 200, []string{`"method":"extrapolated"`, "below the shortest measured prefill"}},
		{"zero cells in a grid", "/v1/calculator/grid?run_id=" + ids["zeros"] + "&max_output_tokens=100", 200, nil},
		{"below the shortest context", "/v1/calculator/decode?run_id=" + ids["no context-0 row"] + "&context_tokens=8192&concurrency=1", 422,
			[]string{"below 0.8× the shortest context", `"supported":"context 13107–`}},
		{"near the shortest context", "/v1/calculator/decode?run_id=" + ids["no context-0 row"] + "&context_tokens=14336&concurrency=2", 200, []string{`"method":"extrapolated"`}},
		{"grid of a run with too many contexts", "/v1/calculator/grid?run_id=" + ids["17 contexts"], 400,
			[]string{`"field":"contexts"`, "this run measured 17"}},
		{"grid of it with named contexts", "/v1/calculator/grid?run_id=" + ids["17 contexts"] + "&contexts=0,4096", 200, []string{`"method":"measured"`}},
		{"two models match", "/v1/calculator/decode?model=nemotron-nano&gpu=RTX%203090&context_tokens=0&concurrency=1", 422,
			[]string{"differ in model", `"model":"cyankiwi/NVIDIA-Nemotron-Nano-9B-v2-AWQ-4bit"`, "which changes the answer; pick one with run_id\""}},
	}
	runCases(t, e, tests)
}

func f64(v float64) *float64 { return &v }

// getCase is a GET and what its answer must hold.
type getCase struct {
	name         string
	target       string
	wantStatus   int
	wantContains []string
}

func runCases(t *testing.T, e *env, tests []getCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := e.do(t, http.MethodGet, tt.target, nil)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %.600s", rec.Code, tt.wantStatus, rec.Body.String())
			}
			for _, want := range tt.wantContains {
				if !strings.Contains(rec.Body.String(), want) {
					t.Errorf("body lacks %s\nbody: %.1500s", want, rec.Body.String())
				}
			}
		})
	}
}

// TestSharedSpeedSurface: a second Fara run on the same GPU and engine that
// differs only in max_model_len (a capacity setting) and measured only the
// short contexts. Selected by model and GPU, the two are not ambiguous: the
// newer run is modelled for capacity, and the older one's cells extend its
// speed surface to contexts it did not measure.
func TestSharedSpeedSurface(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	short := fara
	short.ID, short.Title = "", fara.Title+" (max_model_len 65536)"
	short.Launch.MaxModelLen = new(65536)
	short.Launch.Flags = maps.Clone(fara.Launch.Flags)
	short.Launch.Flags["max-model-len"] = "65536"
	short.Decode = nil
	for _, c := range fara.Decode {
		if c.ContextTokens < 32768 {
			short.Decode = append(short.Decode, c)
		}
	}
	short.Prefill = fara.Prefill[:2]
	stored, _, err := e.st.CreateRun(context.Background(), short)
	if err != nil {
		t.Fatal(err)
	}
	runCases(t, e, []getCase{
		{"alone it cannot reach 32K", "/v1/calculator/decode?run_id=" + stored.ID + "&context_tokens=32768&concurrency=8", 422, []string{"beyond 1.25× the longest context"}},
		// Its cells are fara's own: a near-copy, which counts once, as the
		// earlier run (pooled, it would narrow the bands it repeats).
		{"a copy counts as its original", "/v1/calculator/decode?model=fara&gpu=3060&context_tokens=32768&concurrency=8", 200,
			[]string{`"run_ids":["` + fara.ID + `"]`, "repeats the cells of run " + fara.ID, `"method":"measured"`}},
	})
	rec := e.do(t, http.MethodGet, "/v1/calculator/decode?model=fara&gpu=3060&context_tokens=32768&concurrency=8", nil)
	var p api.DecodePrediction
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	// The older run measured 190.8 tok/s there.
	if p.TotalTokS == nil || p.TotalTokS.Value < 185 || p.TotalTokS.Value > 197 {
		t.Errorf("total %+v, want the older run's 190.8 within 3%%", p.TotalTokS)
	}
	if p.Capacity.KVTokensLow == nil || *p.Capacity.KVTokensLow == 0 || p.Status != "fits" {
		t.Errorf("capacity %+v status %s", p.Capacity, p.Status)
	}
}

// TestErrorBandsAreRounded: a band is served as a person would write it,
// to 6 significant digits, not as the float sum it was (27.529999999999998).
func TestErrorBandsAreRounded(t *testing.T) {
	e := newEnv(t, 0)
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090").ID
	long := regexp.MustCompile(`"error_band_pct":\{[^}]*\d\.\d{7,}`)
	for _, gpu := range []string{"RTX%203080", "L40S", "H100", "A10"} {
		rec := e.do(t, http.MethodGet, "/v1/calculator/decode?run_id="+nemo+"&context_tokens=16384&concurrency=4&rough=true&target_gpu="+gpu, nil)
		if rec.Code != 200 {
			continue
		}
		if m := long.FindString(rec.Body.String()); m != "" {
			t.Errorf("target_gpu=%s: %s", gpu, m)
		}
	}
}
