package assess

import (
	"context"
	"fmt"
	"strings"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/trust"
)

// Peer is run r as corroboration compares it (trust.Peer).
func (w *Writer) Peer(r store.Run) trust.Peer {
	in, gpu, model := w.Inputs(r)
	p := trust.Peer{ID: r.ID, Source: SourceOf(r), Order: r.CreatedAt.UnixNano(),
		Model: strings.ToLower(r.Model.Name), GPU: strings.ToLower(r.Hardware.GPU), NamedModel: r.Model.Name, NamedGPU: r.Hardware.GPU,
		EngineFamily: trust.EngineFamily(in.Engine), GPUCount: max(in.GPUCount, in.TensorParallel, 1), Class: in.Class, Cells: in.Cells}
	layout := in
	layout.GPUCount = p.GPUCount
	p.Split = trust.Split(layout)
	if in.OutputTokensPerRequest != nil {
		p.OutputTokens = *in.OutputTokensPerRequest
	}
	if model != nil {
		p.Model, p.ActiveParamsB = strings.ToLower(model.Name), model.ActiveParams()
		if bits, _, ok := trust.StatedBits(in, model); ok {
			p.Bits = trust.BitsClass(bits)
		}
	}
	if g, ok := calculator.LookupGPU(r.Hardware.GPU); ok {
		p.GPU = strings.ToLower(g.Name)
	}
	if gpu != nil {
		p.BandwidthGBs = gpu.BandwidthGBs
	}
	return trust.Indexed(p)
}

// SourceOf is who run r came from: its API key, else its publisher, else
// the run alone. Runs of one source are not independent of each other.
func SourceOf(r store.Run) string {
	switch {
	case r.SubmittedBy != "":
		return "key:" + r.SubmittedBy
	case r.Publisher != "":
		return "publisher:" + strings.ToLower(r.Publisher)
	}
	return "run:" + r.ID
}

// toStore is c as the store keeps it.
func toStore(c trust.Corroboration) store.Corroboration {
	out := store.Corroboration{Status: c.Status, Sources: c.Sources, Detail: c.Detail, DetailCode: c.Notice.Code, DetailParams: c.Notice.Map(), DetailParts: parts(c.Notice), CopyOf: c.CopyOf, References: []store.CorroborationReference{}}
	for _, r := range c.References {
		out.References = append(out.References, store.CorroborationReference{RunID: r.RunID, Kind: r.Kind, Ratio: r.Ratio})
	}
	return out
}

// judge corroborates runs for one write, reading each run it compares
// once.
type judge struct {
	w     *Writer
	peers map[string]*trust.Peer // nil: hidden or deleted
	runs  map[string]store.Run
	lists map[[2]string][]string
	// judged are the statuses made, stored together (flush).
	judged []store.RunCorroboration
}

func (w *Writer) judge() *judge {
	return &judge{w: w, peers: map[string]*trust.Peer{}, runs: map[string]store.Run{}, lists: map[[2]string][]string{}}
}

func (j *judge) run(ctx context.Context, id string) (store.Run, *trust.Peer, error) {
	if p, ok := j.peers[id]; ok {
		return j.runs[id], p, nil
	}
	r, err := j.w.store.Run(ctx, id)
	if store.IsGone(err) {
		j.peers[id] = nil
		return store.Run{}, nil, nil
	}
	if err != nil {
		return store.Run{}, nil, fmt.Errorf("corroborate: %w", err)
	}
	p := j.w.Peer(r)
	j.peers[id], j.runs[id] = &p, r
	return r, &p, nil
}

// related are the runs of r's model or on its GPU (store.CorroborationPeers).
func (j *judge) related(ctx context.Context, r store.Run) ([]trust.Peer, error) {
	k := [2]string{strings.ToLower(r.Model.Name), strings.ToLower(r.Hardware.GPU)}
	ids, ok := j.lists[k]
	if !ok {
		var err error
		if ids, err = j.w.store.CorroborationPeers(ctx, r.Model.Name, r.Hardware.GPU); err != nil {
			return nil, err
		}
		j.lists[k] = ids
	}
	out := make([]trust.Peer, 0, len(ids))
	for _, id := range ids {
		_, p, err := j.run(ctx, id)
		if err != nil {
			return nil, err
		}
		if p != nil {
			out = append(out, *p)
		}
	}
	return out, nil
}

// corroborate judges stored run id (its status stored by flush); it
// returns the run and its peers.
func (j *judge) corroborate(ctx context.Context, id string) (*trust.Peer, []trust.Peer, error) {
	r, self, err := j.run(ctx, id)
	if err != nil || self == nil {
		return nil, nil, err
	}
	peers, err := j.related(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	if r.Trust != nil && r.Trust.Flagged {
		return self, peers, nil // a flagged run is out already; the flag says why
	}
	j.judged = append(j.judged, store.RunCorroboration{RunID: id, Corroboration: toStore(trust.Corroborate(*self, peers, trust.Bounds()))})
	return self, peers, nil
}

// flush stores the statuses judged, in one transaction with their events;
// it returns the ids whose status changed.
func (j *judge) flush(ctx context.Context) ([]string, error) {
	if len(j.judged) == 0 {
		return nil, nil
	}
	return j.w.store.SetCorroborations(ctx, j.judged)
}

// recheck judges again the runs of peers that self may be a reference of
// (trust.Related, or one whose cells it repeats), but those in done.
func (j *judge) recheck(ctx context.Context, self trust.Peer, peers []trust.Peer, done map[string]bool) error {
	for _, p := range peers {
		if done[p.ID] || !(trust.Related(p, self) || trust.SameCells(self.Cells, p.Cells)) {
			continue
		}
		done[p.ID] = true
		if _, _, err := j.corroborate(ctx, p.ID); err != nil {
			return err
		}
	}
	return nil
}

// Corroborate judges the stored runs ids against the stored runs of their
// model or on their GPU, then judges again each related run they may be
// references of, and stores every status (an event for each change) in
// one transaction. The
// work is bounded by the peers each run reads (store.CorroborationPeers),
// each read once. It returns the ids whose status changed.
func (w *Writer) Corroborate(ctx context.Context, ids ...string) ([]string, error) {
	if !w.corroborate {
		return nil, nil
	}
	j := w.judge()
	done := map[string]bool{}
	type judged struct {
		self  *trust.Peer
		peers []trust.Peer
	}
	var all []judged
	for _, id := range ids {
		done[id] = true
	}
	for _, id := range ids {
		self, peers, err := j.corroborate(ctx, id)
		if err != nil {
			return nil, err
		}
		if self != nil {
			all = append(all, judged{self, peers})
		}
	}
	for _, a := range all {
		if err := j.recheck(ctx, *a.self, a.peers, done); err != nil {
			return nil, err
		}
	}
	return j.flush(ctx)
}

// Uncorroborate judges again the runs run r was a reference of, once it is
// hidden or deleted.
func (w *Writer) Uncorroborate(ctx context.Context, r store.Run) ([]string, error) {
	if !w.corroborate {
		return nil, nil
	}
	j := w.judge()
	peers, err := j.related(ctx, r)
	if err != nil {
		return nil, err
	}
	if err := j.recheck(ctx, w.Peer(r), peers, map[string]bool{r.ID: true}); err != nil {
		return nil, err
	}
	return j.flush(ctx)
}
