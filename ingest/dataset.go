package ingest

import (
	"crypto/sha256"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// DatasetBatch is the runs read from one measurement file of a dataset, or
// from the files a manifest or a format reads together: what one import
// stores, all or nothing.
type DatasetBatch struct {
	// Name is the file, or the files joined by spaces, as found in the
	// dataset.
	Name string
	Runs []store.Run
}

// notData tells the files of a dataset that are not measurements: METAs,
// licences, docs, manifests and Go files.
func notData(name string) bool {
	return name == "META.json" || strings.HasSuffix(name, ".META.json") || strings.HasPrefix(name, "LICENSE") ||
		name == "manifest.json" || name == "README.md" || name == "SOURCES.md" ||
		strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".")
}

// manifestEntry is one run of a folder's manifest.json: files read
// together with a format and a META (the corpus's grids, a series).
type manifestEntry struct {
	Name   string   `json:"name"`
	Format string   `json:"format"`
	Files  []string `json:"files"`
	Meta   string   `json:"meta"`
	TG     int      `json:"tg"`
}

// ReadDataset reads every measurement file under root in fsys with the
// importers matrixd import uses, each with its META: a folder with a
// manifest.json is read as it lists (each entry's files together); any
// other file by the format recognised from it and the META beside it
// (NAME.META.json, else the nearest META.json in its folder or above); the
// files of a folder that no format recognises, and that are no published
// page or run JSON, are read together as InferenceX results. A file whose
// bytes were already read (the same measurement copied into two places) is
// read once. With licensed, only runs whose META (or page) states a
// licence are read; the others are returned as skipped. Batches come in
// path order; an error names the file.
func ReadDataset(fsys fs.FS, root string, licensed bool) (batches []DatasetBatch, skipped []string, err error) {
	var (
		out     []DatasetBatch
		seen    = map[[32]byte]bool{}
		pending = map[string][]ToolFile{} // per folder, files read together as InferenceX
		dirs    []string
	)
	once := func(data []byte) bool {
		h := sha256.Sum256(data)
		if seen[h] {
			return false
		}
		seen[h] = true
		return true
	}
	err = fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			mf, err := fs.ReadFile(fsys, path.Join(p, "manifest.json"))
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			bs, skip, err := readManifest(fsys, p, mf, once, licensed)
			if err != nil {
				return err
			}
			out, skipped = append(out, bs...), append(skipped, skip...)
			return fs.SkipDir // a manifest names every file of its folder that is read
		}
		if notData(d.Name()) {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if !once(data) {
			return nil
		}
		format, err := Detect(data)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if format == "" {
			if r, err := Parse(data); err == nil {
				if licensed && r.License == "" {
					skipped = append(skipped, p)
					return nil
				}
				r.Source = Source(data)
				out = append(out, DatasetBatch{Name: p, Runs: []store.Run{r}})
				return nil
			}
			dir := path.Dir(p)
			if pending[dir] == nil {
				dirs = append(dirs, dir)
			}
			pending[dir] = append(pending[dir], ToolFile{Name: p, Data: data})
			return nil
		}
		b, err := readTool(fsys, format, "", []ToolFile{{Name: p, Data: data}}, 0, licensed)
		if err != nil {
			return err
		}
		if b.Runs == nil {
			skipped = append(skipped, p)
		} else {
			out = append(out, b)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, dir := range dirs {
		b, err := readTool(fsys, FormatInferenceX, "", pending[dir], 0, licensed)
		if err != nil {
			return nil, nil, fmt.Errorf("%w (no format recognises these files, and they are not InferenceX results read together)", err)
		}
		if b.Runs == nil {
			skipped = append(skipped, b.Name)
		} else {
			out = append(out, b)
		}
	}
	return out, skipped, nil
}

// readManifest reads the entries of the manifest.json of folder dir.
func readManifest(fsys fs.FS, dir string, mf []byte, once func([]byte) bool, licensed bool) (out []DatasetBatch, skipped []string, err error) {
	var entries []manifestEntry
	if err := json.Unmarshal(mf, &entries); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path.Join(dir, "manifest.json"), err)
	}
	for _, e := range entries {
		if licensed {
			meta, err := fs.ReadFile(fsys, path.Join(dir, e.Meta))
			if err != nil {
				return nil, nil, err
			}
			if !statesLicense(meta) {
				skipped = append(skipped, path.Join(dir, e.Name))
				continue // its files may be left out of fsys
			}
		}
		files := make([]ToolFile, 0, len(e.Files))
		fresh := false
		for _, f := range e.Files {
			p := path.Join(dir, f)
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return nil, nil, err
			}
			if once(data) {
				fresh = true
			}
			files = append(files, ToolFile{Name: p, Data: data})
		}
		if !fresh {
			continue // every file already read elsewhere: the same measurement
		}
		b, err := readTool(fsys, e.Format, path.Join(dir, e.Meta), files, e.TG, false)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %w", path.Join(dir, "manifest.json"), e.Name, err)
		}
		out = append(out, b)
	}
	return out, skipped, nil
}

// statesLicense reports whether a META names a licence.
func statesLicense(meta []byte) bool {
	var m struct {
		License string `json:"license"`
	}
	return json.Unmarshal(meta, &m) == nil && m.License != ""
}

// readTool reads files of format together with the META at metaPath, or
// the one beside the first file, each run keeping the files and META as
// its source. With licensed, files whose META states no licence give a
// batch without runs.
func readTool(fsys fs.FS, format, metaPath string, files []ToolFile, tg int, licensed bool) (DatasetBatch, error) {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	name := strings.Join(names, " ")
	if metaPath == "" {
		var err error
		if metaPath, err = FindMeta(fsys, files[0].Name); err != nil {
			return DatasetBatch{}, fmt.Errorf("%s: %w", files[0].Name, err)
		}
	}
	meta, err := fs.ReadFile(fsys, metaPath)
	if err != nil {
		return DatasetBatch{}, fmt.Errorf("%s: meta: %w", name, err)
	}
	if licensed && !statesLicense(meta) {
		return DatasetBatch{Name: name}, nil
	}
	runs, err := ParseToolRuns(format, metaPath, meta, files, ToolOptions{TG: tg})
	if err != nil {
		return DatasetBatch{}, fmt.Errorf("%s: %w", name, err)
	}
	src, err := ToolSource(format, meta, files)
	if err != nil {
		return DatasetBatch{}, err
	}
	for i := range runs {
		runs[i].Source = src
	}
	return DatasetBatch{Name: name, Runs: runs}, nil
}

// FindMeta is the META of a tool's output file in fsys: NAME.META.json for
// its extension, NAME.META.json after it, or the nearest META.json in its
// folder or a folder above.
func FindMeta(fsys fs.FS, name string) (string, error) {
	candidates := []string{strings.TrimSuffix(name, path.Ext(name)) + ".META.json", name + ".META.json"}
	for dir := path.Dir(name); ; dir = path.Dir(dir) {
		candidates = append(candidates, path.Join(dir, "META.json"))
		if dir == "." || dir == "/" {
			break
		}
	}
	for _, c := range slices.Compact(candidates) {
		if _, err := fs.Stat(fsys, c); err == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("a tool's output needs its META (run JSON without cells: title, model, hardware, engine): put %s beside it, or a META.json in its folder", candidates[0])
}

//go:embed testdata/series testdata/corpus/llama.cpp testdata/corpus/lmdeploy testdata/corpus/tensorrt-llm
//go:embed testdata/corpus/vllm/manifest.json testdata/corpus/vllm/*.META.json testdata/corpus/vllm/vllm-h200-* testdata/corpus/vllm/vllm-mi355x-*
var publishedFS embed.FS

// PublishedGrids is the published grids this package holds whose licence
// allows redistribution (llama.cpp's series and batched-bench grids,
// LMDeploy's, Argonne's TensorRT-LLM and InferenceX's vLLM grids), each
// folder with its manifest.json, METAs and SOURCES.md, under "testdata".
// The others (no licence stated) are not embedded; their METAs state no
// licence, so ReadDataset with licensed skips them.
func PublishedGrids() fs.FS { return publishedFS }
