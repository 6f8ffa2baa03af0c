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
	"github.com/matrixd/matrixd/msg"
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
	supported := msg.New("predict.supported_other_model_kind")
	src, ok := facts.Lookup(from.Model.Name)
	if !ok || src.KVBytesPerToken(1) <= 0 {
		return calculator.ModelRatios{}, calculator.NewRefusal(msg.New("predict.facts_lack_run_model", from.Model.Name), supported)
	}
	dst, ok := facts.Lookup(model)
	if !ok || dst.KVBytesPerToken(1) <= 0 {
		return calculator.ModelRatios{}, calculator.NewRefusal(msg.New("predict.facts_lack_model", model), supported)
	}
	if src.MixtureOfExperts() != dst.MixtureOfExperts() {
		return calculator.ModelRatios{}, calculator.NewRefusal(msg.New("predict.models_not_one_kind", src.Name, dst.Name), supported)
	}
	srcBytes := Run(from).WeightBytesPerParam()
	dstBytes := calculator.Run{Quantization: quantization}.WeightBytesPerParam()
	if srcBytes <= 0 || dstBytes <= 0 {
		return calculator.ModelRatios{}, calculator.NewRefusal(msg.New("predict.quantization_bytes_unknown"), supported)
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
func (c *Service) otherModelRun(ctx context.Context, sel Selection) (string, otherModel, msg.Message, error) {
	return c.otherModelRunAmong(ctx, sel, store.RunFilter{EngineVersion: sel.EngineVersion, KVCacheDtype: sel.KVCacheDtype})
}

// otherModelRunAmong is otherModelRun choosing among the runs on sel.GPU
// that narrow matches (the planner's engine, KV-cache dtype and method
// class).
func (c *Service) otherModelRunAmong(ctx context.Context, sel Selection, narrow store.RunFilter) (string, otherModel, msg.Message, error) {
	var none otherModel
	if c.factsErr != nil {
		return "", none, msg.Message{}, c.factsErr
	}
	if !sel.IncludeFlagged {
		// Flagged runs of the model itself are there: the answer is theirs
		// to give (include_flagged), not another model's.
		own := narrow
		own.Model = sel.Model
		f, err := c.WithGPU(ctx, own, sel.GPU)
		if err != nil {
			return "", none, msg.Message{}, err
		}
		if flagged, _, err := c.store.RunConfigs(ctx, f, 1); err != nil || len(flagged) > 0 {
			return "", none, msg.Message{}, cmp.Or(err, errNoOtherModel)
		}
	}
	narrow.ExcludeFlagged = !sel.IncludeFlagged
	f, err := c.WithGPU(ctx, narrow, sel.GPU)
	if err != nil {
		return "", none, msg.Message{}, err
	}
	// The choice is among models: the newest run of each, so that many
	// runs of one model crowd none of the others out.
	candidates, _, err := c.store.NewestRunPerModel(ctx, f, maxCandidates)
	if err != nil || len(candidates) == 0 {
		return "", none, msg.Message{}, cmp.Or(err, errNoOtherModel)
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
		return "", none, msg.Message{}, err
	}
	if len(elsewhere) > 0 {
		name, quant, quantFrom = elsewhere[0].ModelName, elsewhere[0].Quantization, elsewhere[0].ID
	}
	supported := msg.New("predict.supported_other_model_answer")
	dst, ok := c.facts.Lookup(name)
	if !ok || dst.KVBytesPerToken(1) <= 0 {
		m := msg.New("predict.other_model_no_entry", clip(sel.Model), clip(sel.GPU), strings.Join(clipAll(others, 4), ", "), clip(name))
		if ok {
			m = msg.New("predict.other_model_no_kv_geometry", clip(sel.Model), clip(sel.GPU), strings.Join(clipAll(others, 4), ", "), dst.Name)
		}
		return "", none, msg.Message{}, calculator.NewRefusal(m, supported)
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
		return "", none, msg.Message{}, calculator.NewRefusal(msg.New("predict.other_model_same_model",
			clip(sel.Model), dst.Name, clip(sel.GPU), strings.Join(clipAll(same, 4), ", ")), supported)
	}
	best, bestDist := -1, math.Inf(1)
	var bestRatios calculator.ModelRatios
	var why []msg.Message
	for i, cfg := range candidates {
		q := cmp.Or(quant, cfg.Quantization)
		r, err := ModelRatios(c.facts, store.Run{Model: store.Model{Name: cfg.ModelName, Quantization: cfg.Quantization}, Launch: store.Launch{KVCacheDtype: cfg.KVCacheDtype}}, name, q)
		var ref *calculator.Refusal
		if errors.As(err, &ref) {
			w := msg.New("predict.model_refused", clip(cfg.ModelName), ref.Message)
			if !slices.ContainsFunc(why, func(m msg.Message) bool { return m.Text == w.Text }) {
				why = append(why, w)
			}
			continue
		}
		if err != nil {
			return "", none, msg.Message{}, err
		}
		src, _ := c.facts.Lookup(cfg.ModelName)
		if d := math.Abs(math.Log(dst.ActiveParams() / src.ActiveParams())); d < bestDist {
			best, bestDist, bestRatios = i, d, r
		}
	}
	if best < 0 {
		return "", none, msg.Message{}, calculator.NewRefusal(msg.New("predict.other_model_none_scalable",
			clip(sel.Model), clip(sel.GPU), dst.Name, joined(why)), supported)
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
	warn := msg.New("predict.other_model_answered", dst.Name, cfg.GPU, cfg.ID, src.Name, engine, src.ActiveParams(), dst.ActiveParams(), orNone(cfg.Quantization))
	if quant != "" {
		warn = msg.New("predict.other_model_answered_quant", dst.Name, cfg.GPU, cfg.ID, src.Name, engine, src.ActiveParams(), dst.ActiveParams(), quant, quantFrom)
	}
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
			return calculator.NewRefusal(msg.New("predict.prefill_facts_lack_attention", m.Name, o.from.Name, o.to.Name),
				msg.New("predict.supported_prefill_facts"))
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

// joined is ms said one after another, "; " between them, each still a
// message of its own (a catalog says each in its language).
func joined(ms []msg.Message) msg.Message {
	if len(ms) == 0 {
		return msg.Message{}
	}
	out := ms[len(ms)-1]
	for i := len(ms) - 2; i >= 0; i-- {
		out = msg.New("predict.then", ms[i], out)
	}
	return out
}
