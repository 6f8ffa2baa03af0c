package predict

import (
	"fmt"

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
	return calculator.ModelRatios{
		Weights: dst.ActiveParams() * dstBytes / (src.ActiveParams() * srcBytes),
		KV:      dst.KVBytesPerToken(1) / src.KVBytesPerToken(1),
	}, nil
}
