package calculator_test

import (
	"strings"
	"testing"

	"github.com/matrixd/matrixd/calculator"
)

func TestHardwareCatalogCoverage(t *testing.T) {
	cat := calculator.Hardware()
	gens := map[string]bool{}
	for _, g := range cat.GPUs() {
		gens[g.Generation] = true
		if !strings.HasPrefix(g.Source, "https://") {
			t.Errorf("%s: source %q is not a data-sheet address", g.Name, g.Source)
		}
		for _, name := range append([]string{g.Name}, g.Aliases...) {
			if got, ok := cat.Lookup(name); !ok || got.Name != g.Name {
				t.Errorf("%q resolves to %q (%v), want %q", name, got.Name, ok, g.Name)
			}
		}
	}
	// What the catalog promises: every NVIDIA data-centre and RTX GPU since
	// Ampere, AMD MI200/MI300 and Apple M-series (a sample of each).
	for _, name := range []string{
		"A10", "A100 40GB PCIe", "A100 80GB SXM", "H100 SXM", "H100 PCIe", "H200 SXM", "L4", "L40S", "B200", "GB200",
		"RTX A6000", "RTX 6000 Ada", "RTX PRO 6000 Blackwell",
		"RTX 3060", "RTX 3090", "RTX 3090 Ti", "RTX 4060 Ti 16GB", "RTX 4090", "RTX 5090",
		"MI210", "MI250X", "MI300X", "MI325X", "M1 Max", "M2 Ultra", "M3 Max", "M4 Max",
	} {
		if _, ok := cat.Lookup(name); !ok {
			t.Errorf("%s is not in the catalog", name)
		}
	}
	for _, gen := range []string{"ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3"} {
		if !gens[gen] {
			t.Errorf("no GPU of generation %s", gen)
		}
	}
}

func TestHardwareAliases(t *testing.T) {
	cat := calculator.Hardware()
	for _, name := range []string{"3090", "RTX 3090", "rtx3090", "GeForce RTX 3090", "NVIDIA GeForce RTX 3090", "nvidia-geforce-rtx-3090"} {
		if g, ok := cat.Lookup(name); !ok || g.Name != "RTX 3090" {
			t.Errorf("%q resolves to %q (%v), want RTX 3090", name, g.Name, ok)
		}
	}
	if g, ok := cat.Lookup("RTX 3090 Ti"); !ok || g.Name != "RTX 3090 Ti" {
		t.Errorf("RTX 3090 Ti resolves to %q", g.Name)
	}
	if _, ok := cat.Lookup("Voodoo 5"); ok {
		t.Error("an unknown GPU resolved")
	}
	for _, typo := range []string{"RTX 309", "RTX 3095", "3099"} {
		if s := cat.Suggest(typo, 6); len(s) == 0 || !strings.Contains(strings.Join(s, ","), "RTX 3090") {
			t.Errorf("suggestions for %s: %v", typo, s)
		}
	}
}

func TestParseCatalogRejects(t *testing.T) {
	entry := func(name, alias string) string {
		return `{"name":"` + name + `","aliases":["` + alias + `"],"vendor":"NVIDIA","generation":"ampere","vram_gb":24,"memory_bandwidth_gbs":936,"source":"https://example.com"}`
	}
	sys := func(power string) string {
		return `{"gpus":[{"name":"M1 Max","vendor":"Apple","generation":"apple-m1","vram_gb":64,"memory_bandwidth_gbs":400,"source":"https://example.com",` + power + `}]}`
	}
	for _, c := range []struct{ name, doc, want string }{
		{"alias names two GPUs", `{"gpus":[` + entry("RTX 3090", "3090") + `,` + entry("RTX 3090 Ti", "GeForce RTX 3090") + `]}`, `names both "RTX 3090" and "RTX 3090 Ti"`},
		{"no source", `{"gpus":[{"name":"X","vendor":"NVIDIA","generation":"ampere","vram_gb":1,"memory_bandwidth_gbs":1}]}`, "source are required"},
		{"no bandwidth", `{"gpus":[{"name":"X","vendor":"NVIDIA","generation":"ampere","vram_gb":1,"source":"https://x"}]}`, "must be positive"},
		{"not JSON", `{"gpus":`, "unexpected end"},
		{"system power without source", sys(`"system_max_power_w":115,"system_max_power_read":"2026-12-01"`), "needs system_max_power_source"},
		{"system power from a bare name", sys(`"system_max_power_w":115,"system_max_power_source":"support.apple.com/102027","system_max_power_read":"2026-12-01"`), "needs system_max_power_source"},
		{"system power without date", sys(`"system_max_power_w":115,"system_max_power_source":"https://support.apple.com/102027"`), "needs system_max_power_read"},
		{"system power with a bad date", sys(`"system_max_power_w":115,"system_max_power_source":"https://support.apple.com/102027","system_max_power_read":"1 Dec 2026"`), "needs system_max_power_read"},
		{"source without system power", sys(`"system_max_power_source":"https://support.apple.com/102027"`), "come only with system_max_power_w"},
		{"system power not positive", sys(`"system_max_power_w":0,"system_max_power_source":"https://support.apple.com/102027","system_max_power_read":"2026-12-01"`), "positive or null"},
	} {
		if _, err := calculator.ParseCatalog([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestHardwarePowerHasSource fails when a catalog power figure has no
// vendor page behind it: a TDP comes from the GPU's source, a system
// maximum from its own page, read on a stated date.
func TestHardwarePowerHasSource(t *testing.T) {
	for _, g := range calculator.Hardware().GPUs() {
		if g.TDPW != nil && !strings.HasPrefix(g.Source, "https://") {
			t.Errorf("%s: tdp_w %v without a source page", g.Name, *g.TDPW)
		}
		if g.SystemMaxPowerW == nil {
			continue
		}
		if !strings.HasPrefix(g.SystemMaxPowerSource, "https://") {
			t.Errorf("%s: system_max_power_w %v without a source page", g.Name, *g.SystemMaxPowerW)
		}
		if g.SystemMaxPowerRead == "" {
			t.Errorf("%s: system_max_power_w %v without the date it was read", g.Name, *g.SystemMaxPowerW)
		}
		if g.TDPW != nil {
			t.Errorf("%s: a system maximum is for a GPU without a TDP, and this one has tdp_w %v", g.Name, *g.TDPW)
		}
		if !strings.Contains(g.Note, "system") {
			t.Errorf("%s: the note does not say which system the %v W is", g.Name, *g.SystemMaxPowerW)
		}
	}
}

// TestRunGPUTakesItsVRAMSize: a run names a card sold in several sizes by
// its bare name and states its VRAM: it is that size's entry (capacity and,
// for the A100, bandwidth differ), and a name or size the catalog does not
// split stays as it resolves.
func TestRunGPUTakesItsVRAMSize(t *testing.T) {
	for _, c := range []struct {
		name string
		vram float64
		want string
	}{
		{"RTX 4060 Ti", 16, "RTX 4060 Ti 16GB"},
		{"NVIDIA GeForce RTX 4060 Ti", 15.6, "RTX 4060 Ti 16GB"},
		{"RTX 4060 Ti", 8, "RTX 4060 Ti 8GB"},
		{"RTX 4060 Ti", 0, "RTX 4060 Ti 8GB"},
		{"A100", 40, "A100 40GB SXM"},
		{"A100 PCIe", 40, "A100 40GB PCIe"},
		{"A100", 80, "A100 80GB SXM"},
		{"RTX 3060", 8, "RTX 3060 8GB"},
		{"RTX 3090", 24, "RTX 3090"},
		{"RTX 3090", 48, "RTX 3090"}, // no 48 GB 3090: the card as named
		{"H100 SXM", 80, "H100 SXM"},
	} {
		g, ok := calculator.LookupRunGPU(c.name, c.vram)
		if !ok || g.Name != c.want {
			t.Errorf("%q with %g GB: %q (%v), want %q", c.name, c.vram, g.Name, ok, c.want)
		}
	}
}
