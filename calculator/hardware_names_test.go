package calculator_test

import (
	"testing"

	"github.com/matrixd/matrixd/calculator"
)

// TestRealRunGPUNames: the names real runs give their GPUs, and the V100
// in its four versions, resolve to the catalog's entries.
func TestRealRunGPUNames(t *testing.T) {
	cat := calculator.Hardware()
	for name, want := range map[string]string{
		"H100 80GB": "H100 SXM", "H100-SXM5-80GB": "H100 SXM", "H100 80GB HBM3": "H100 SXM", "A100-SXM4-40GB": "A100 40GB SXM",
		"NVIDIA GeForce RTX 4090": "RTX 4090", "B300 SXM6": "B300", "Tesla V100-SXM2-32GB": "V100 SXM2 32GB", "V100": "V100 SXM2 16GB",
		"Tesla V100-PCIE-16GB": "V100 PCIe 16GB", "V100 PCIe 32GB": "V100 PCIe 32GB",
	} {
		if g, ok := cat.Lookup(name); !ok || g.Name != want {
			t.Errorf("%q resolves to %q (%v), want %q", name, g.Name, ok, want)
		}
	}
	if g, ok := cat.LookupSized("V100", 32); !ok || g.Name != "V100 SXM2 32GB" || g.BandwidthGBs != 900 {
		t.Errorf("V100 with 32 GB = %+v %v, want the 32 GB SXM2 at 900 GB/s", g, ok)
	}
	if g, ok := cat.LookupSized("V100 PCIe", 32); !ok || g.Name != "V100 PCIe 32GB" {
		t.Errorf("V100 PCIe with 32 GB = %q %v", g.Name, ok)
	}
}
