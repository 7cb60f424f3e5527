package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// readManifest reads deploy/cronjob.yaml through Python's YAML parser (the
// module has no YAML library) and decodes each object with unknown fields
// refused. It skips the test when python3 has no yaml module.
func readManifest(t *testing.T) map[string]cronJobManifest {
	t.Helper()
	python := ""
	for _, p := range []string{os.Getenv("RECONCILE_PYTHON"), "python3", "/usr/bin/python3"} {
		if p != "" && exec.Command(p, "-c", "import yaml").Run() == nil {
			python = p
			break
		}
	}
	if python == "" {
		if os.Getenv("RECONCILE_REQUIRE_TOOLS") == "1" {
			t.Fatal("python3 with its yaml module (Debian: python3-yaml) is needed to read deploy/cronjob.yaml")
		}
		t.Skip("python3 with its yaml module (Debian: python3-yaml) is needed to read deploy/cronjob.yaml")
	}
	cmd := exec.Command(python, "-c", "import json, sys, yaml; json.dump(list(yaml.safe_load_all(sys.stdin)), sys.stdout)")
	cmd.Stdin = strings.NewReader(readFile(t, "deploy/cronjob.yaml"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("deploy/cronjob.yaml is not YAML: %v", err)
	}
	var docs []json.RawMessage
	if err := json.Unmarshal(out, &docs); err != nil {
		t.Fatal(err)
	}
	objs := map[string]cronJobManifest{}
	for i, doc := range docs {
		var m cronJobManifest
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("deploy/cronjob.yaml object %d: %v\n%s", i+1, err, doc)
		}
		objs[m.Kind] = m
	}
	return objs
}

// findingsExitCodeFlag says whether `reconcile run` has the flag that makes
// "a person is needed" exit 0, which the CronJob needs.
func findingsExitCodeFlag(t *testing.T) bool {
	return strings.Contains(reconcile(t, nil, "run", "--help").stdout, "--findings-exit-code")
}

// The CronJob is YAML with the API's field names; it runs at 04:30 UTC,
// one at a time, within deadlines, with resources, the secrets from the
// Secret and the workbook on a volume. Its command and arguments, run with
// the environment the Secret gives, reconcile a SQLite ledger against a
// sample report, page, push metrics and write the workbook.
func TestKubernetesCronJobExample(t *testing.T) {
	t.Parallel()
	objs := readManifest(t)
	pvc, cj := objs["PersistentVolumeClaim"], objs["CronJob"]
	if cj.APIVersion != "batch/v1" || pvc.APIVersion != "v1" {
		t.Fatalf("deploy/cronjob.yaml: want a v1 PersistentVolumeClaim and a batch/v1 CronJob, got %v", objs)
	}
	sched, err := cron.ParseStandard("CRON_TZ=" + cj.Spec.TimeZone + " " + cj.Spec.Schedule)
	if err != nil {
		t.Fatalf("schedule %q in %q: %v", cj.Spec.Schedule, cj.Spec.TimeZone, err)
	}
	from := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	if got, want := sched.Next(from), time.Date(2026, 11, 29, 4, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("schedule %q in %s: next after %v is %v, want %v", cj.Spec.Schedule, cj.Spec.TimeZone, from, got, want)
	}
	job := cj.Spec.JobTemplate.Spec
	pod := job.Template.Spec
	if cj.Spec.ConcurrencyPolicy != "Forbid" || cj.Spec.StartingDeadlineSeconds <= 0 || job.ActiveDeadlineSeconds <= 0 ||
		job.BackoffLimit == nil || *job.BackoffLimit != 0 || pod.RestartPolicy != "Never" {
		t.Errorf("CronJob spec %+v: want concurrencyPolicy Forbid, both deadlines, backoffLimit 0 and restartPolicy Never", cj.Spec)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
		t.Errorf("resources %+v: want cpu and memory requests and a memory limit", c.Resources)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef.Name != "reconcile" {
		t.Errorf("envFrom %+v: want the Secret reconcile", c.EnvFrom)
	}
	if !pod.SecurityContext.RunAsNonRoot || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation ||
		!c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("security contexts %+v %+v: want a non-root user, no privilege escalation, a read-only root", pod.SecurityContext, c.SecurityContext)
	}
	// Every file the run writes is on a volume: the workbook and the result
	// on the claim, temporary files on an emptyDir at /tmp.
	volumes := map[string]string{}
	for _, v := range pod.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Metadata.Name:
			volumes[v.Name] = "claim"
		case v.EmptyDir != nil:
			volumes[v.Name] = "emptyDir"
		}
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = volumes[m.Name]
	}
	if mounts["/tmp"] != "emptyDir" {
		t.Errorf("mounts %v: want an emptyDir at /tmp, since the root is read-only", mounts)
	}
	for _, a := range c.Args {
		for _, flag := range []string{"--json=", "--xlsx="} {
			if path, ok := strings.CutPrefix(a, flag); ok && mounts[filepath.Dir(path)] != "claim" {
				t.Errorf("%s writes to %s, which is not the claim %s (mounts %v)", flag, filepath.Dir(path), pvc.Metadata.Name, mounts)
			}
		}
	}
	if len(c.Command) != 1 || c.Command[0] != hostBinary {
		t.Fatalf("command %q, want [%s]", c.Command, hostBinary)
	}

	// The container's command as written, with the Secret's environment.
	s := newSite(t)
	push, pushed := pushgateway(t)
	args := []string{}
	for _, a := range c.Args {
		a = strings.ReplaceAll(a, "http://pushgateway.monitoring:9091", push)
		a = strings.ReplaceAll(a, hostState, s.state)
		a = strings.ReplaceAll(a, pagerURL, s.pager.URL)
		a = strings.ReplaceAll(a, inputURL, s.w.reports)
		args = append(args, a)
	}
	hasFlag := findingsExitCodeFlag(t)
	if !hasFlag {
		// Until the flag exists, run the rest of the arguments: they must work.
		args = removeArg(args, "--findings-exit-code=0")
	}
	r := reconcile(t, s.env(t), args...)
	if want := map[bool]int{true: 0, false: 3}[hasFlag]; r.code != want {
		t.Fatalf("the CronJob's arguments (%q): %s; want exit %d", args, r, want)
	}
	s.checkRun(t, []string{filepath.Join(s.state, "discrepancies.xlsx"), filepath.Join(s.state, "last.json")}, 0)
	if got := pushed(); len(got) != 1 || !strings.HasPrefix(got[0], "PUT /metrics/job/reconcile") {
		t.Errorf("pushed %q; want one PUT to /metrics/job/reconcile", got)
	}
	if !hasFlag {
		t.Skip("reconcile run has no --findings-exit-code yet: the CronJob's `--findings-exit-code=0` (exit 0 when a person is needed, " +
			"so that the Job does not fail every night until the person is done) is not checked; without it the run exits 3 and the Job fails")
	}
}

// removeArg is args without arg, failing nothing if it is absent.
func removeArg(args []string, arg string) []string {
	var out []string
	for _, a := range args {
		if a != arg {
			out = append(out, a)
		}
	}
	return out
}
