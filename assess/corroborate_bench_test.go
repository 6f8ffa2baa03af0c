package assess_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/matrixd/matrixd/assess"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// BenchmarkSubmitCrowdedModel times one run submitted where its model and
// GPU hold store.MaxCorroborationPeers runs already, each from a key of its
// own: the most a write reads and judges again.
func BenchmarkSubmitCrowdedModel(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "matrixd.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w, err := assess.New(st)
	if err != nil {
		b.Fatal(err)
	}
	base := storetest.Runs(5, 1)[0]
	var crowd []store.Run
	for i := range store.MaxCorroborationPeers {
		r := scaled(base, 0.2*(1+float64(i)/1000), fmt.Sprintf("k%d", i))
		crowd = append(crowd, r)
	}
	if _, _, err := w.CreateRuns(ctx, crowd); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		if _, _, err := w.SubmitRun(ctx, scaled(base, 0.25*(1+float64(i)/100000), fmt.Sprintf("new%d", i)), nil); err != nil {
			b.Fatal(err)
		}
	}
}
