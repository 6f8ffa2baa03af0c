// Package storegen generates plausible synthetic matrix runs, for load
// tests, benchmarks and the generate command, on stores far larger than the
// published data. Unlike storetest it does not import package testing, so
// the commands that ship may use it.
package storegen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/matrixd/matrixd/store"
)

type gpuSpec struct {
	name   string
	vramGB float64
	bwGBs  float64 // memory bandwidth, GB/s
}

// gpus and the tables below are the generator's fixed vocabulary.
func gpus() []gpuSpec {
	return []gpuSpec{
		{"RTX 3060", 12, 360}, {"RTX 3090", 24, 936}, {"RTX 4090", 24, 1008}, {"RTX 5090", 32, 1792},
		{"L40S", 48, 864}, {"A100", 80, 2039}, {"H100", 80, 3350}, {"RTX 4060 Ti", 16, 288},
	}
}

type modelSpec struct {
	name    string
	paramsB float64
	kvBytes float64 // KV bytes per token
}

func models() []modelSpec {
	return []modelSpec{
		{"Qwen/Qwen3-4B-AWQ", 4, 36 << 10}, {"meta-llama/Llama-3.1-8B-Instruct-AWQ", 8, 64 << 10},
		{"cyankiwi/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit", 12, 40 << 10}, {"mistralai/Mistral-Small-24B-AWQ", 24, 80 << 10},
		{"google/gemma-3-12b-it-qat-int4", 12, 96 << 10}, {"Qwen/Qwen3-30B-A3B-GPTQ-Int4", 30, 48 << 10},
	}
}

func quants() []string   { return []string{"AWQ 4-bit", "GPTQ 4-bit", "AutoRound W4A16", "FP8"} }
func kvDtypes() []string { return []string{"auto", "fp8", "int4_per_token_head"} }
func versions() []string { return []string{"0.30.1", "0.31.0", "0.32.0"} }
func contexts() []int    { return []int{0, 16 << 10, 32 << 10, 64 << 10, 128 << 10} }
func batches() []int     { return []int{1, 2, 4, 8, 16, 32, 64, 128} }
func submitters() []string {
	return []string{"alice", "bob", "carol", "dave", "erin", "sandberg"}
}

// Runs returns n synthetic runs drawn from seed: the same seed gives the same
// runs, and every run's content differs from the others'.
func Runs(seed uint64, n int) []store.Run {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]store.Run, n)
	for i := range out {
		out[i] = run(rng, i, contexts(), batches())
	}
	return out
}

// Grids returns n synthetic runs drawn from seed, as Runs does, each with
// a decode grid of contexts × concurrencies cells (up to the 64 × 64 a run
// may have): contexts 2K apart from 0, concurrencies 2 apart from 1.
func Grids(seed uint64, n, contexts, concurrencies int) []store.Run {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ls, bs := make([]int, contexts), make([]int, concurrencies)
	for i := range ls {
		ls[i] = i << 10
	}
	for i := range bs {
		bs[i] = 1 + i
	}
	out := make([]store.Run, n)
	for i := range out {
		out[i] = run(rng, i, ls, bs)
		out[i].Title += fmt.Sprintf(" (%d × %d)", contexts, concurrencies)
	}
	return out
}

func run(rng *rand.Rand, i int, ls, bs []int) store.Run {
	g := pick(rng, gpus())
	m := pick(rng, models())
	q := pick(rng, quants())
	kv := pick(rng, kvDtypes())
	v := pick(rng, versions())
	maxOut := 8192
	maxLen := 131072
	util := 0.9 + 0.01*float64(rng.IntN(5))
	weightsGB := m.paramsB * 0.55
	// A step reads the weights as the quantization stores them: 4.4 bits a
	// parameter at 4-bit quantizations (with their scales), 8.4 at FP8.
	stepGB := weightsGB
	if q == "FP8" {
		stepGB = m.paramsB * 1.05
	}
	poolGB := math.Max(g.vramGB*util-weightsGB-1.5, 0.5)
	capacity := poolGB * (1 << 30) / m.kvBytes
	// Step time model (ms): weights streamed once a step, then per-sequence
	// and KV-read costs, jittered per run.
	jit := 1 + 0.1*(rng.Float64()-0.5)
	a := stepGB / g.bwGBs * 1000 / 0.75 * jit
	b := 0.08 * jit
	c := m.kvBytes / (g.bwGBs * 0.15 * 1e9) * 1000 * jit

	r := store.Run{
		Title:     fmt.Sprintf("%s on %s %.0fGB #%d", m.name, g.name, g.vramGB, i),
		Submitter: pick(rng, submitters()),
		Model:     store.Model{Name: m.name, Quantization: q},
		Hardware: store.Hardware{Type: "Discrete GPU", GPU: g.name, GPUCount: ptr(1), VRAMGB: ptr(g.vramGB),
			CPU: "AMD Ryzen 9 7900X", CPUCores: ptr(12), RAMGB: ptr(64.0), OS: "Ubuntu 24.04.5"},
		Engine:    store.Engine{Name: "vllm", Version: v, Quantization: q, Backend: "cuda", Build: "vllm/vllm-openai:v" + v},
		Benchmark: store.Benchmark{Tool: "llm-inference-bench", ToolVersion: "v0.8.0", DecodeTest: "Fixed duration", SecondsPerMeasurement: ptr(30.0), MaxOutputTokens: ptr(maxOut)},
		Launch: store.Launch{
			Command:     fmt.Sprintf("vllm serve %s --max-model-len %d --gpu-memory-utilization %.2f --kv-cache-dtype %s", m.name, maxLen, util, kv),
			MaxModelLen: ptr(maxLen), GPUMemoryUtilization: ptr(util), MaxNumSeqs: ptr(128), KVCacheDtype: kv,
			Flags: map[string]string{"max-model-len": fmt.Sprint(maxLen), "gpu-memory-utilization": fmt.Sprintf("%.2f", util), "kv-cache-dtype": kv},
		},
	}
	for _, l := range contexts()[1:] {
		ttft := 0.1*float64(l)/1024*(1+float64(l)/(256<<10))*1000/g.bwGBs*jit + 50
		r.Prefill = append(r.Prefill, store.PrefillCell{ContextTokens: l, Status: store.StatusValid,
			PromptTokS: ptr(round1(float64(l) / ttft * 1000)), TTFTMs: ptr(math.Round(ttft))})
	}
	for _, l := range ls {
		for _, bb := range bs {
			cell := store.DecodeCell{ContextTokens: l, Concurrency: bb, Status: store.StatusOverCapacity}
			if float64(bb)*float64(l+maxOut) <= capacity {
				B, L := float64(bb), float64(l)/1024
				tbt := a + b*B + c*B*L*1024
				total := B * 1000 / tbt * (1 + 0.05*rng.Float64())
				dur := 30.0
				cell.Status = store.StatusValid
				cell.TotalTokS, cell.PerRequestTokS = ptr(round1(total)), ptr(round1(1000/tbt))
				cell.TBTMs, cell.TTFTMs = ptr(round1(tbt)), ptr(math.Round(40+B*L*3))
				cell.AvgActiveRequests, cell.CompletedRequests = ptr(B), ptr(0)
				cell.OutputTokens, cell.DurationS = ptr(int(math.Round(total*dur))), ptr(dur)
			}
			r.Decode = append(r.Decode, cell)
		}
	}
	return r
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func ptr[T any](v T) *T { return &v }

// Scaled is r with every decode cell's speed multiplied by f(context,
// concurrency), consistently: total and per-request tok/s and output
// tokens by it, time between tokens divided by it.
func Scaled(r store.Run, f func(contextTokens, concurrency int) float64) store.Run {
	r.Decode = slices.Clone(r.Decode)
	for i, c := range r.Decode {
		k := f(c.ContextTokens, c.Concurrency)
		mul := func(p *float64) *float64 {
			if p == nil {
				return nil
			}
			v := *p * k
			return &v
		}
		c.TotalTokS, c.PerRequestTokS = mul(c.TotalTokS), mul(c.PerRequestTokS)
		if c.TBTMs != nil {
			v := *c.TBTMs / k
			c.TBTMs = &v
		}
		if c.OutputTokens != nil {
			v := int(math.Round(float64(*c.OutputTokens) * k))
			c.OutputTokens = &v
		}
		r.Decode[i] = c
	}
	return r
}
