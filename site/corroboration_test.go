package site_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestCorroborationOnPages posts, from two other keys, a run 5 % from a
// seeded one (corroborated) and a 2× copy of it (disputed): each run's
// page shows its status and says why in the page's language, linking the
// run it was compared with; the disputed run is left off the default
// leaderboard and shown with its badge when include_flagged=true; the
// organizations page counts each submitter's corroborated and disputed
// runs.
func TestCorroborationOnPages(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	agree, double := e.corroborate(t, fara)
	faraLink := `<a href="/runs/` + fara.ID + `" translate="no">` + fara.ID + `</a>`

	for _, tt := range []struct {
		name, target, api string
		want, wantNot     []string
	}{
		{"corroborated", "/runs/" + agree.ID, "/v1/runs/" + agree.ID,
			[]string{`<span class="badge corroborated">corroborated by 1 independent run</span>`, "Agrees with 1 independent source", faraLink}, []string{"badge disputed"}},
		{"corroborated in Thai", "/runs/" + agree.ID + "?lang=th", "/v1/runs/" + agree.ID,
			[]string{`<span class="badge corroborated">ได้รับการยืนยันจากผลการวัดอิสระ 1 รายการ</span>`, "สอดคล้องกับแหล่งอิสระ 1 แหล่ง", "เทียบกับ:", faraLink},
			[]string{"corroborated by", "Agrees with", "independent source", "Compared with"}},
		{"disputed", "/runs/" + double.ID, "/v1/runs/" + double.ID,
			[]string{`<span class="badge disputed">disputed</span>`, "Disputed by 2 independent sources", "2×", "Compared with:", faraLink}, []string{"badge corroborated"}},
		{"disputed in Chinese", "/runs/" + double.ID + "?lang=zh-Hant", "/v1/runs/" + double.ID,
			[]string{`<span class="badge disputed">有爭議</span>`, "遭 2 個獨立來源質疑", faraLink}, []string{"Disputed by"}},
		{"seeded run", "/runs/" + fara.ID, "/v1/runs/" + fara.ID, []string{`<p class="corroboration">`}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := e.page(t, tt.target, tt.api)
			body := rec.Body.String()
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d; body %.1500s", rec.Code, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %s\n%.5000s", w, body)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(body, w) {
					t.Errorf("page has %s", w)
				}
			}
		})
	}

	// row is the table cell of the run id links to on a page, badges and all.
	row := func(body, id string) string {
		i := strings.Index(body, `<a href="/runs/`+id+`">`)
		if i < 0 {
			return ""
		}
		j := strings.Index(body[i:], "</td>")
		return body[i : i+j]
	}
	board := "/leaderboard?context_tokens=0&concurrency=1&model=fara"
	def := e.page(t, board, "/v1/leaderboard").Body.String()
	if row(def, double.ID) != "" {
		t.Errorf("the default leaderboard ranks the disputed run")
	}
	if r := row(def, agree.ID); !strings.Contains(r, `<span class="badge corroborated">corroborated</span>`) {
		t.Errorf("the corroborated run's row on the leaderboard: %q", r)
	}
	if !strings.Contains(def, "(flagged and disputed runs left out)") {
		t.Errorf("the leaderboard's caption does not say disputed runs are left out")
	}
	all := e.page(t, board+"&include_flagged=true", "/v1/leaderboard").Body.String()
	if r := row(all, double.ID); !strings.Contains(r, `<span class="badge disputed">disputed</span>`) {
		t.Errorf("the disputed run's row with include_flagged=true: %q", r)
	}
	runs := e.page(t, "/?model=fara", "/v1/runs").Body.String()
	if r := row(runs, double.ID); !strings.Contains(r, `<span class="badge disputed">disputed</span>`) {
		t.Errorf("the disputed run's row in the runs list: %q", r)
	}
	sub := e.page(t, "/submitters/SecondLab?lang=th", "/v1/submitters/SecondLab").Body.String()
	if r := row(sub, agree.ID); !strings.Contains(r, `<span class="badge corroborated">ได้รับการยืนยัน</span>`) {
		t.Errorf("the corroborated run's row on its submitter's page in Thai: %q", r)
	}
	model := e.page(t, "/models/"+fara.Model.Name, "/v1/models").Body.String()
	if r := row(model, double.ID); !strings.Contains(r, `<span class="badge disputed">disputed</span>`) {
		t.Errorf("the disputed run's row on its model's page: %q", r)
	}
	plan := e.page(t, "/planner?context_tokens=0&min_per_request_tok_s=1&model=fara", "/v1/planner").Body.String()
	if i := strings.Index(plan, `<a href="/runs/`+agree.ID+`">`); i < 0 || !strings.Contains(plan[i:i+strings.Index(plan[i:], "</td>")], `<span class="badge corroborated">corroborated</span>`) {
		t.Errorf("the planner's option of the corroborated run lacks its badge\n%.6000s", plan)
	}

	orgs := e.page(t, "/organizations", "/v1/submitters").Body.String()
	for _, w := range []string{
		`<th scope="col" class="n">Corroborated</th><th scope="col" class="n">Disputed</th>`,
		`<a href="/submitters/SecondLab">SecondLab</a></td><td class="n">1</td><td class="n">1</td><td class="n">1</td><td class="n">0</td>`,
		`<a href="/submitters/ThirdLab">ThirdLab</a></td><td class="n">1</td><td class="n">1</td><td class="n">0</td><td class="n">1</td>`,
	} {
		if !strings.Contains(orgs, w) {
			t.Errorf("organizations page lacks %s\n%.5000s", w, orgs)
		}
	}

	// A copy of the seeded run's cells under another model's name links
	// its original.
	renamed := storetest.Scaled(fara, func(int, int) float64 { return 1 })
	renamed.Model.Name, renamed.Submitter = "someorg/Renamed-4B", "FourthLab"
	copied := postRun(t, e, e.keys(t, "eve")["eve"], renamed, http.StatusCreated)
	if copied.Corroboration.CopyOf == nil || *copied.Corroboration.CopyOf != fara.ID {
		t.Fatalf("the renamed copy: %+v", copied.Corroboration)
	}
	page := e.page(t, "/runs/"+copied.ID+"?lang=th", "/v1/runs/"+copied.ID).Body.String()
	if !strings.Contains(page, `<span class="badge disputed">ถูกโต้แย้ง</span>`) || !strings.Contains(page, "ต้นฉบับ: "+faraLink) {
		t.Errorf("the renamed copy's page lacks its badge or its original\n%.5000s", page)
	}
}

// corroborate posts two copies of run from two keys of other submitters
// (SecondLab, ThirdLab): one 5 % from it, which the API finds
// corroborated, and one twice as fast, which it finds disputed.
func (e *env) corroborate(t *testing.T, run store.Run) (agree, disputed api.Run) {
	t.Helper()
	k := e.keys(t, "alice", "mallory")
	scaled := func(f float64, submitter string) store.Run {
		r := storetest.Scaled(run, func(int, int) float64 { return f })
		r.Title = run.Title + " measured again"
		r.Submitter = submitter
		return r
	}
	agree = postRun(t, e, k["alice"], scaled(1.05, "SecondLab"), http.StatusCreated)
	disputed = postRun(t, e, k["mallory"], scaled(2, "ThirdLab"), http.StatusCreated)
	if agree.Corroboration.Status != api.Corroborated || disputed.Corroboration.Status != api.Disputed || disputed.Trust.Flagged {
		t.Fatalf("the API judges the copies %s and %s (flagged %v), want corroborated and disputed (not flagged)",
			agree.Corroboration.Status, disputed.Corroboration.Status, disputed.Trust.Flagged)
	}
	return agree, disputed
}
