package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Method classes: what kind of measurement a run's decode cells are.
// Numbers of different classes are never ranked, pooled or planned
// together (openapi.yaml's MethodClass says what each measures).
const (
	MethodSustainedDecode = "sustained_decode"
	MethodBatchedBurst    = "batched_burst"
	MethodServingSweep    = "serving_sweep"
	MethodStaticBatch     = "static_batch"
	MethodDecodeAtDepth   = "decode_at_depth"
	MethodOneShot         = "one_shot"
)

// MethodClasses lists the classes, in the order the API documents them.
func MethodClasses() []string {
	return []string{MethodSustainedDecode, MethodBatchedBurst, MethodServingSweep, MethodStaticBatch, MethodDecodeAtDepth, MethodOneShot}
}

// How a method treats the prompts' prefill.
const (
	PrefillExcluded = "excluded"
	PrefillIncluded = "included"
)

// Method is how a run's decode cells were measured: the class and its
// parameters.
type Method struct {
	Class                  string   `json:"class"`
	MeasurementS           *float64 `json:"measurement_s,omitempty"`
	OutputTokensPerRequest *int     `json:"output_tokens_per_request,omitempty"`
	Prefill                string   `json:"prefill,omitempty"`
}

func (m Method) equal(o Method) bool {
	return m.Class == o.Class && m.Prefill == o.Prefill && eqPtr(m.MeasurementS, o.MeasurementS) && eqPtr(m.OutputTokensPerRequest, o.OutputTokensPerRequest)
}

func eqPtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// InferMethod is the method the run's benchmark text names (the tool, the
// decode test), with its parameters from the benchmark fields; ok is false
// when the text names none.
func InferMethod(r Run) (Method, bool) {
	b := r.Benchmark
	text := strings.ToLower(b.Tool + " | " + b.DecodeTest)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(text, w) {
				return true
			}
		}
		return false
	}
	m := Method{OutputTokensPerRequest: b.MaxOutputTokens}
	switch {
	case has("batched-bench", "batched_bench"):
		m.Class, m.Prefill = MethodBatchedBurst, PrefillExcluded
	case has("bench serve", "benchmark_serving", "bench_serving", "benchmark serving"):
		m.Class, m.Prefill = MethodServingSweep, PrefillIncluded
	case has("profile_generation", "trtllm-bench", "tensorrt-llm", "run_profiling", "static batch"):
		m.Class, m.Prefill = MethodStaticBatch, PrefillIncluded
	case has("ds4-bench", "llama-bench"):
		m.Class, m.Prefill = MethodDecodeAtDepth, PrefillExcluded
	case has("llmfit", "localmaxxing"):
		m.Class, m.Prefill = MethodOneShot, PrefillIncluded
	case has("fixed duration", "sustained"):
		m.Class, m.Prefill = MethodSustainedDecode, PrefillExcluded
		m.MeasurementS, m.OutputTokensPerRequest = b.SecondsPerMeasurement, nil
	default:
		return Method{}, false
	}
	return m, true
}

// ToolMethod is the class a benchmark tool's name implies
// (llama-batched-bench measures a batched burst, vllm bench serve a
// serving sweep …); ok is false when the name implies none.
func ToolMethod(tool string) (string, bool) {
	m, ok := InferMethod(Run{Benchmark: Benchmark{Tool: tool}})
	return m.Class, ok
}

// defaultMethod is the method a run has when it states none: the one its
// text names, else sustained decode, which every decode grid was
// documented as before runs stated a method (stored runs keep it).
func defaultMethod(r Run) Method {
	if m, ok := InferMethod(r); ok {
		return m
	}
	return Method{Class: MethodSustainedDecode, MeasurementS: r.Benchmark.SecondsPerMeasurement, Prefill: PrefillExcluded}
}

// MethodOf is the run's method: the stated one, or its default.
func (r *Run) MethodOf() Method {
	if r.Method != nil {
		return *r.Method
	}
	return defaultMethod(*r)
}

func (v *validator) method(r Run) {
	m := r.Method
	if m == nil {
		if _, ok := InferMethod(r); !ok {
			v.add("/method", "is required: benchmark.tool and benchmark.decode_test do not say how the cells were measured; send \"method\": {\"class\": …} with one of %s (openapi.yaml's MethodClass says what each measures)",
				strings.Join(MethodClasses(), ", "))
		}
		return
	}
	known := false
	for _, c := range MethodClasses() {
		known = known || m.Class == c
	}
	if !known {
		v.add("/method/class", "is %q; it must be one of %s", m.Class, strings.Join(MethodClasses(), ", "))
	}
	if implied, ok := ToolMethod(r.Benchmark.Tool); known && ok && implied != m.Class {
		v.add("/method/class", "is %q, but benchmark.tool %q measures %s: send \"method\": {\"class\": %q} for that tool's output, or name the tool that measured %s",
			m.Class, clipText(r.Benchmark.Tool), implied, implied, m.Class)
	}
	if m.MeasurementS != nil && (math.IsNaN(*m.MeasurementS) || *m.MeasurementS <= 0 || *m.MeasurementS > MaxSecondsPerCell) {
		v.add("/method/measurement_s", "is %s; it must be above 0 and at most %s", fnum(*m.MeasurementS), fnum(MaxSecondsPerCell))
	}
	v.intRange("/method/output_tokens_per_request", m.OutputTokensPerRequest, 1, MaxContextTokens)
	if m.Prefill != "" && m.Prefill != PrefillExcluded && m.Prefill != PrefillIncluded {
		v.add("/method/prefill", "is %q; it must be excluded or included", m.Prefill)
	}
}

// writeMethodTrust stores the run's method and checks, in the transaction
// that stores the run.
func writeMethodTrust(ctx context.Context, tx *tx, id string, m Method, t *Trust) error {
	checks, flagged, version := "null", 0, 0
	if t != nil {
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		checks, flagged, version = string(b), boolInt(t.Flagged), t.RulesVersion
	}
	_, err := tx.ExecContext(ctx, `UPDATE runs SET method_class = ?, method_measurement_s = ?, method_output_tokens = ?, method_prefill = ?,
		trust_checks = ?, flagged = ?, trust_version = ? WHERE id = ?`,
		m.Class, m.MeasurementS, m.OutputTokensPerRequest, nullStr(m.Prefill), checks, flagged, version, id)
	return err
}

// readMethodTrust reads what writeMethodTrust stored.
func readMethodTrust(ctx context.Context, q querier, r *Run) error {
	var (
		m       Method
		prefill *string
		checks  string
	)
	if err := q.QueryRowContext(ctx, "SELECT method_class, method_measurement_s, method_output_tokens, method_prefill, trust_checks FROM runs WHERE id = ?", r.ID).
		Scan(&m.Class, &m.MeasurementS, &m.OutputTokensPerRequest, &prefill, &checks); err != nil {
		return fmt.Errorf("run %s method: %w", r.ID, err)
	}
	m.Prefill = deref(prefill)
	r.Method = &m
	if checks != "null" && checks != "" {
		var t Trust
		if err := json.Unmarshal([]byte(checks), &t); err != nil {
			return fmt.Errorf("run %s trust: %w", r.ID, err)
		}
		r.Trust = &t
	}
	return nil
}

// classifyRuns gives every stored run its default method (migration 7 on
// SQLite, 2 on PostgreSQL). Their checks are made by the caller of the
// store, which knows the rules (Trust.RulesVersion 0: not yet checked).
func classifyRuns(ctx context.Context, tx *tx) error {
	ids, err := runIDs(ctx, tx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		r, err := scanRun(tx.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE id = ?", id))
		if err != nil {
			return err
		}
		if err := writeMethodTrust(ctx, tx, id, defaultMethod(r), nil); err != nil {
			return err
		}
	}
	return nil
}

func runIDs(ctx context.Context, q querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT id FROM runs ORDER BY created_at, id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// clipText shortens s for a message quoting it.
func clipText(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	return s
}
