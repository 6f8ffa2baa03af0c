package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/matrixd/matrixd/api"
)

// TestModelFactsCatalog: the facts table as the API lists it, each entry
// with its source and the stored runs that mean it, cacheable as the other
// catalogs are.
func TestModelFactsCatalog(t *testing.T) {
	e := newEnv(t, 0)
	rec := e.do(t, http.MethodGet, "/v1/model-facts", nil)
	var list api.ModelFactsList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	byName := map[string]api.ModelFacts{}
	for _, m := range list.Items {
		byName[m.Name] = m
		if m.Source == "" || len(m.Match) == 0 || m.ParamsB <= 0 || m.ActiveParamsB > m.ParamsB {
			t.Errorf("%s: %+v", m.Name, m)
		}
	}
	if f, n := byName["Fara1.5-4B"], byName["NVIDIA-Nemotron-Nano-12B-v2"]; f.MeasuredRuns != 1 || n.MeasuredRuns != 1 {
		t.Errorf("measured runs Fara %d, Nemotron %d; want the seeds once each", f.MeasuredRuns, n.MeasuredRuns)
	}
	if g := byName["gpt-oss-20b"]; g.Kind != api.Moe || g.ActiveParamsB != 3.6 || g.KVBytesPerToken16Bit == nil || *g.KVBytesPerToken16Bit != 12*8*64*2*2 {
		t.Errorf("gpt-oss-20b: %+v", g)
	}
	if g := byName["gemma-3-4b-it"]; g.Kind != api.Dense || g.KVLayers != nil || g.KVBytesPerToken16Bit != nil {
		t.Errorf("gemma-3-4b-it, without KV geometry: %+v", g)
	}
	etag := rec.Header().Get("ETag")
	if again := e.do(t, http.MethodGet, "/v1/model-facts", http.Header{"If-None-Match": {etag}}); etag == "" || again.Code != 304 {
		t.Errorf("ETag %q, conditional GET %d; want 304", etag, again.Code)
	}
	runCases(t, e, []getCase{
		{"an entry by a run's model name", "/v1/model-facts/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit", 200,
			[]string{`"name":"NVIDIA-Nemotron-Nano-12B-v2"`, `"measured_runs":1`, `"source":"https://huggingface.co/nvidia/`}},
		{"an entry by its own name", "/v1/model-facts/Llama-2-13B", 200, []string{`"attention_heads":40`, `"kv_heads":40`, `"measured_runs":0`}},
		{"no entry", "/v1/model-facts/Falcon-40B-Instruct", 404, []string{`no entry of the model facts table matches \"Falcon-40B-Instruct\"`, "trust/SOURCES.md"}},
	})
}
