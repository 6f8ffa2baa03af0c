package predict

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/trust"
)

// ModelRatios compares another model (its name as a run would give it, and
// its quantization) with the model of run from, for asking from's fit about
// it (calculator.Query.OtherModel): the bytes of weights one token reads
// (active parameters × bytes per parameter) and the KV bytes per token of
// context, the other's over from's. It refuses where the model facts or a
// quantization do not tell them, and between a dense model and a mixture of
// experts (a batch reads more experts than one request does, so their
// weights per step grow differently with concurrency).
func ModelRatios(facts *trust.Models, from store.Run, model, quantization string) (calculator.ModelRatios, error) {
	supported := "another model of the run's kind (dense or mixture of experts) that the model facts table describes (parameters, KV layers, KV heads, head dimension), with a known quantization"
	src, ok := facts.Lookup(from.Model.Name)
	if !ok || src.KVBytesPerToken(1) <= 0 {
		return calculator.ModelRatios{}, &calculator.Refusal{Reason: fmt.Sprintf("the model facts do not describe the run's model %q (KV geometry)", from.Model.Name), Supported: supported}
	}
	dst, ok := facts.Lookup(model)
	if !ok || dst.KVBytesPerToken(1) <= 0 {
		return calculator.ModelRatios{}, &calculator.Refusal{Reason: fmt.Sprintf("the model facts do not describe %q (KV geometry)", model), Supported: supported}
	}
	if src.MixtureOfExperts() != dst.MixtureOfExperts() {
		return calculator.ModelRatios{}, &calculator.Refusal{Reason: fmt.Sprintf("%s and %s are not of one kind (dense, mixture of experts): their speed does not scale from one to the other", src.Name, dst.Name), Supported: supported}
	}
	srcBytes := Run(from).WeightBytesPerParam()
	dstBytes := calculator.Run{Quantization: quantization}.WeightBytesPerParam()
	if srcBytes <= 0 || dstBytes <= 0 {
		return calculator.ModelRatios{}, &calculator.Refusal{Reason: "a quantization's bytes per parameter are unknown", Supported: supported}
	}
	kv := kvElemBytes(from.Launch.KVCacheDtype)
	return calculator.ModelRatios{
		Weights: dst.ActiveParams() * dstBytes / (src.ActiveParams() * srcBytes),
		KV:      dst.KVBytesPerToken(1) / src.KVBytesPerToken(1),
		From:    modelSize(src, srcBytes, kv),
		To:      modelSize(dst, dstBytes, kv),
	}, nil
}

// modelSize is what model m takes at bytes a parameter and kv bytes a KV
// element.
func modelSize(m trust.Model, bytes, kv float64) calculator.ModelSize {
	return calculator.ModelSize{
		WeightsGB: m.ParamsB * bytes, KVBytesPerToken: m.KVBytesPerToken(kv),
		FLOPsPerToken: 2 * m.ActiveParams() * 1e9, AttentionFLOPs: m.AttentionFLOPsPerContextToken(), Hybrid: m.Hybrid(),
	}
}

// kvElemBytes is the bytes a KV element takes in a run's KV cache dtype;
// one not stated, or auto, is the model's 16-bit dtype, as engines default
// to.
func kvElemBytes(dtype string) float64 {
	if s := strings.ToLower(dtype); s == "" || s == "auto" {
		return 2
	}
	return trust.KVBytes(dtype)
}

// errNoOtherModel says no run of another model stands in: the selection's
// own answer (no run) stands.
var errNoOtherModel = errors.New("no run of another model on the GPU")

// otherModelRun chooses, for a model and GPU selection that matched no
// run, the run of another model on that GPU to answer from: of the same
// kind (dense, or mixture of experts), both models described by the model
// facts, the closest in active parameters (the newest of equals). It
// returns the run's id, the ratios of the asked model to its model, and a
// warning naming both. errNoOtherModel: no such question to answer (no
// run on the GPU, or only flagged runs of the model there); a
// *calculator.Refusal: runs of other models are there, but the facts do
// not let them stand in, saying which facts are missing.
func (c *Service) otherModelRun(ctx context.Context, sel Selection) (string, otherModel, string, error) {
	return c.otherModelRunAmong(ctx, sel, store.RunFilter{EngineVersion: sel.EngineVersion, KVCacheDtype: sel.KVCacheDtype})
}

// otherModelRunAmong is otherModelRun choosing among the runs on sel.GPU
// that narrow matches (the planner's engine, KV-cache dtype and method
// class).
func (c *Service) otherModelRunAmong(ctx context.Context, sel Selection, narrow store.RunFilter) (string, otherModel, string, error) {
	var none otherModel
	if c.factsErr != nil {
		return "", none, "", c.factsErr
	}
	if !sel.IncludeFlagged {
		// Flagged runs of the model itself are there: the answer is theirs
		// to give (include_flagged), not another model's.
		own := narrow
		own.Model = sel.Model
		f, err := c.WithGPU(ctx, own, sel.GPU)
		if err != nil {
			return "", none, "", err
		}
		if flagged, _, err := c.store.RunConfigs(ctx, f, 1); err != nil || len(flagged) > 0 {
			return "", none, "", cmp.Or(err, errNoOtherModel)
		}
	}
	narrow.ExcludeFlagged = !sel.IncludeFlagged
	f, err := c.WithGPU(ctx, narrow, sel.GPU)
	if err != nil {
		return "", none, "", err
	}
	// The choice is among models: the newest run of each, so that many
	// runs of one model crowd none of the others out.
	candidates, _, err := c.store.NewestRunPerModel(ctx, f, maxCandidates)
	if err != nil || len(candidates) == 0 {
		return "", none, "", cmp.Or(err, errNoOtherModel)
	}
	var others []string
	for _, cfg := range candidates {
		if !slices.Contains(others, cfg.ModelName) {
			others = append(others, cfg.ModelName)
		}
	}
	// The asked model as a stored run of it elsewhere names it (and its
	// quantization), else as asked.
	name, quant, quantFrom := sel.Model, "", ""
	elsewhere, _, err := c.store.RunConfigs(ctx, store.RunFilter{Model: sel.Model, ExcludeFlagged: !sel.IncludeFlagged}, 1)
	if err != nil {
		return "", none, "", err
	}
	if len(elsewhere) > 0 {
		name, quant, quantFrom = elsewhere[0].ModelName, elsewhere[0].Quantization, elsewhere[0].ID
	}
	supported := "a model the model facts table describes (GET /v1/model-facts), answered from a run of another model of its kind (dense or mixture of experts) on the GPU that the table describes too"
	howToAdd := "ask the service's operator to add it to the table, with a source for its parameters (active ones for a mixture of experts), KV layers, KV heads and head dimension (docs/calculator.md, The model facts table, says how)"
	dst, ok := c.facts.Lookup(name)
	if !ok || dst.KVBytesPerToken(1) <= 0 {
		what := fmt.Sprintf("has no entry matching %q", clip(name))
		if ok {
			what = fmt.Sprintf("lacks the KV geometry (kv_layers, kv_heads, head_dim) of %s", dst.Name)
		}
		return "", none, "", &calculator.Refusal{Reason: fmt.Sprintf("no run of a model matching %q is stored on GPU %q, and runs of other models there (%s) cannot be scaled to it: the model facts table %s; name the model as the table does (GET /v1/model-facts lists each entry's match patterns) or %s",
			clip(sel.Model), clip(sel.GPU), strings.Join(clipAll(others, 4), ", "), what, howToAdd), Supported: supported}
	}
	// Runs of the asked model itself (the facts entry it means) under
	// another name are its own answer, not another model's.
	var same []string
	for _, cfg := range candidates {
		if src, ok := c.facts.Lookup(cfg.ModelName); ok && src.Name == dst.Name && !slices.Contains(same, cfg.ModelName) {
			same = append(same, cfg.ModelName)
		}
	}
	if len(same) > 0 {
		return "", none, "", &calculator.Refusal{Reason: fmt.Sprintf("no run's model name contains %q, but runs of %s are stored on GPU %q as %s: ask with model set to one of those names",
			clip(sel.Model), dst.Name, clip(sel.GPU), strings.Join(clipAll(same, 4), ", ")), Supported: supported}
	}
	best, bestDist := -1, math.Inf(1)
	var bestRatios calculator.ModelRatios
	var why []string
	for i, cfg := range candidates {
		q := cmp.Or(quant, cfg.Quantization)
		r, err := ModelRatios(c.facts, store.Run{Model: store.Model{Name: cfg.ModelName, Quantization: cfg.Quantization}, Launch: store.Launch{KVCacheDtype: cfg.KVCacheDtype}}, name, q)
		var ref *calculator.Refusal
		if errors.As(err, &ref) {
			if w := clip(cfg.ModelName) + ": " + ref.Reason; !slices.Contains(why, w) {
				why = append(why, w)
			}
			continue
		}
		if err != nil {
			return "", none, "", err
		}
		src, _ := c.facts.Lookup(cfg.ModelName)
		if d := math.Abs(math.Log(dst.ActiveParams() / src.ActiveParams())); d < bestDist {
			best, bestDist, bestRatios = i, d, r
		}
	}
	if best < 0 {
		return "", none, "", &calculator.Refusal{Reason: fmt.Sprintf("no run of a model matching %q is stored on GPU %q, and no run of another model there can be scaled to %s (%s); where the model facts lack a model, %s",
			clip(sel.Model), clip(sel.GPU), dst.Name, strings.Join(why, "; "), howToAdd), Supported: supported}
	}
	cfg := candidates[best]
	src, _ := c.facts.Lookup(cfg.ModelName)
	engine := cfg.EngineName
	if cfg.EngineVersion != "" {
		engine += " " + cfg.EngineVersion
	}
	if cfg.GPUCount != nil && *cfg.GPUCount > 1 {
		engine += fmt.Sprintf(" on %d GPUs", *cfg.GPUCount)
	}
	q := fmt.Sprintf("at the source run's quantization (%s), as %s states none", orNone(cfg.Quantization), dst.Name)
	if quant != "" {
		q = fmt.Sprintf("at %s, as its run %s", quant, quantFrom)
	}
	warn := fmt.Sprintf("no run of %s on %s: answered from run %s of %s (%s), the nearest model of its kind in active parameters (%.3g B, against %.3g B), scaled to %s %s",
		dst.Name, cfg.GPU, cfg.ID, src.Name, engine, src.ActiveParams(), dst.ActiveParams(), dst.Name, q)
	return cfg.ID, otherModel{ratios: bestRatios, from: src, to: dst}, warn, nil
}

// otherModel is the asked model (to) answered from a run of another (from),
// with their ratios.
type otherModel struct {
	ratios   calculator.ModelRatios
	from, to trust.Model
}

// prefillFacts refuses a prefill answer for o where the model facts lack
// what its FLOPs need, naming the model and the facts.
func (o otherModel) prefillFacts() error {
	for _, m := range []trust.Model{o.to, o.from} {
		if m.AttentionFLOPsPerContextToken() <= 0 {
			return &calculator.Refusal{Reason: fmt.Sprintf("the model facts table lacks the attention geometry (kv_layers, attention_heads, head_dim) of %s, which scaling prefill from %s to %s needs (FLOPs of a prompt token); the service's operator can add them to the table, with their source (docs/calculator.md, The model facts table, says how)", m.Name, o.from.Name, o.to.Name),
				Supported: "a model whose parameters and attention geometry the model facts table gives, answered from a run of another such model on the GPU"}
		}
	}
	return nil
}

// clipAll clips each of names, at most n of them, saying how many more.
func clipAll(names []string, n int) []string {
	out := make([]string, 0, min(len(names), n)+1)
	for _, s := range names[:min(len(names), n)] {
		out = append(out, clip(s))
	}
	if len(names) > n {
		out = append(out, fmt.Sprintf("%d more", len(names)-n))
	}
	return out
}
