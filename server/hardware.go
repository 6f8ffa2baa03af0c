package server

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
)

// ListHardware implements GET /v1/hardware.
func (s *Server) ListHardware(ctx context.Context, req api.ListHardwareRequestObject) (api.ListHardwareResponseObject, error) {
	counts, err := s.measuredByGPU(ctx)
	if err != nil {
		return nil, err
	}
	vendor, gen := strings.ToLower(str(req.Params.Vendor)), strings.ToLower(str(req.Params.Generation))
	var vendors, gens []string
	for _, g := range calculator.Hardware().GPUs() {
		vendors, gens = append(vendors, strings.ToLower(g.Vendor)), append(gens, strings.ToLower(g.Generation))
	}
	for _, f := range []struct {
		field, value string
		known        []string
	}{{"vendor", vendor, vendors}, {"generation", gen, gens}} {
		if known := sortedSet(f.known); f.value != "" && !slices.Contains(known, f.value) {
			return nil, invalidParamSays(f.field, msg.New("problem.catalog_has_no", f.field, clip(f.value), strings.Join(known, ", ")))
		}
	}
	out := api.ListHardware200JSONResponse{Items: []api.HardwareGPU{}}
	for _, g := range calculator.Hardware().GPUs() {
		if (vendor == "" || strings.ToLower(g.Vendor) == vendor) && (gen == "" || strings.ToLower(g.Generation) == gen) {
			out.Items = append(out.Items, toAPIHardware(g, counts[g.Name]))
		}
	}
	return out, nil
}

// GetHardware implements GET /v1/hardware/{gpu}.
func (s *Server) GetHardware(ctx context.Context, req api.GetHardwareRequestObject) (api.GetHardwareResponseObject, error) {
	cat := calculator.Hardware()
	g, ok := cat.Lookup(req.GPU)
	if !ok {
		msg := fmt.Sprintf("no GPU named %q in the hardware catalog", clip(req.GPU))
		if sug := cat.Suggest(req.GPU, 6); len(sug) > 0 {
			msg += "; did you mean " + strings.Join(sug, ", ") + "?"
		} else {
			msg += "; GET /v1/hardware lists them"
		}
		return nil, &store.Error{Kind: store.ErrNotFound, Msg: msg}
	}
	counts, err := s.measuredByGPU(ctx)
	if err != nil {
		return nil, err
	}
	return api.GetHardware200JSONResponse(toAPIHardware(g, counts[g.Name])), nil
}

// measuredByGPU counts stored runs per catalog GPU: the store's GPU names
// resolved through the catalog's aliases, of the VRAM size each run states
// (a run on "RTX 4060 Ti" with 16 GB is the 16 GB card's).
func (s *Server) measuredByGPU(ctx context.Context) (map[string]int, error) {
	gpus, err := s.store.GPUs(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, g := range gpus {
		rest := g.RunCount
		for i, vram := range g.VRAMGB {
			if spec, ok := calculator.LookupRunGPU(g.GPU, vram); ok {
				out[spec.Name] += g.VRAMRuns[i]
			}
			rest -= g.VRAMRuns[i]
		}
		if spec, ok := calculator.LookupGPU(g.GPU); ok && rest > 0 {
			out[spec.Name] += rest
		}
	}
	return out, nil
}

func toAPIHardware(g calculator.GPUSpec, runs int) api.HardwareGPU {
	aliases := g.Aliases
	if aliases == nil {
		aliases = []string{}
	}
	return api.HardwareGPU{
		Name: g.Name, Aliases: aliases, Vendor: g.Vendor, Architecture: g.Architecture, Generation: g.Generation,
		Segment: api.HardwareGPUSegment(g.Segment), VRAMGB: g.VRAMGB, MemoryBandwidthGbs: g.BandwidthGBs,
		Fp16Tflops: g.FP16TFLOPS, TdpW: g.TDPW, SystemMaxPowerW: g.SystemMaxPowerW,
		SystemMaxPowerSource: opt(g.SystemMaxPowerSource), SystemMaxPowerRead: opt(g.SystemMaxPowerRead),
		Source: g.Source, Note: opt(g.Note), MeasuredRuns: runs,
	}
}

// sortedSet is xs sorted, each once.
func sortedSet(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}
