// SPDX-License-Identifier: BSD-2-Clause

// helmrender renders a Helm chart the way `helm template` does, without
// helm: Go's text/template with sprig's functions, helm's own (include, tpl,
// required, toYaml, ...) and the .Values / .Release / .Chart / .Capabilities
// objects. kiln's tests and `make manifests` use it; there is no helm here.
//
//	helmrender [-f values.yaml]... [-name kiln] [-namespace kiln]
//	           [-kube-version v1.30.0] [-api-versions a/v1,b/v1]
//	           [-skip-tests] [-notes] CHART_DIR
//
// Output: every rendered manifest as a "---" document headed by
// "# Source: <chart>/templates/<file>", in helm's install order (hooks
// last); -notes prints the rendered NOTES.txt instead. Values files merge
// like helm's: maps key by key, anything else replaced, null deletes.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/semver"
	"github.com/Masterminds/sprig"
	"sigs.k8s.io/yaml"
)

type valuesFiles []string

func (v *valuesFiles) String() string     { return strings.Join(*v, ",") }
func (v *valuesFiles) Set(s string) error { *v = append(*v, s); return nil }

// apiVersions answers .Capabilities.APIVersions.Has.
type apiVersions []string

func (a apiVersions) Has(v string) bool {
	for _, x := range a {
		if x == v {
			return true
		}
	}
	return false
}

// Kinds in the order helm installs them; other kinds follow, hooks last.
var installOrder = []string{"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleBinding", "Role", "RoleBinding", "Service", "DaemonSet", "Pod",
	"ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob",
	"Ingress", "APIService"}

type manifest struct {
	source, body, kind string
	hook, test        bool
}

func readYAML(path string) (map[string]interface{}, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return m, nil
}

// merge lays src over dst.
func merge(dst, src map[string]interface{}) {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		sm, sok := v.(map[string]interface{})
		dm, dok := dst[k].(map[string]interface{})
		if sok && dok {
			merge(dm, sm)
		} else {
			dst[k] = v
		}
	}
}

// chartObject gives Chart.yaml's keys helm's names: appVersion -> AppVersion.
func chartObject(meta map[string]interface{}) map[string]interface{} {
	c := map[string]interface{}{}
	for k, v := range meta {
		if k == "apiVersion" {
			k = "APIVersion"
		}
		c[strings.ToUpper(k[:1])+k[1:]] = v
	}
	return c
}

func funcMap(t **template.Template) template.FuncMap {
	f := sprig.TxtFuncMap()
	// helm leaves out what reads the environment of the machine rendering.
	delete(f, "env")
	delete(f, "expandenv")
	f["toYaml"] = func(v interface{}) string {
		data, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(data), "\n")
	}
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if s, ok := v.(string); v == nil || (ok && s == "") {
			return nil, errors.New(msg)
		}
		return v, nil
	}
	f["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		err := (*t).ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		clone, err := (*t).Clone()
		if err != nil {
			return "", err
		}
		inline, err := clone.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		if err := inline.Execute(&buf, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	return f
}

// split cuts a rendered file into its documents and notes their kind and
// whether they are hooks.
func split(source, text string) ([]manifest, error) {
	var out []manifest
	for _, doc := range strings.Split("\n"+text, "\n---") {
		body := strings.Trim(doc, "\n")
		if strings.TrimSpace(body) == "" {
			continue
		}
		var head struct {
			Kind     string
			Metadata struct{ Annotations map[string]string }
		}
		if err := yaml.Unmarshal([]byte(body), &head); err != nil {
			return nil, fmt.Errorf("%s: %v\n%s", source, err, body)
		}
		hook := head.Metadata.Annotations["helm.sh/hook"]
		out = append(out, manifest{source: source, body: body, kind: head.Kind,
			hook: hook != "", test: strings.Contains(hook, "test")})
	}
	return out, nil
}

func rank(m manifest) int {
	if m.hook {
		return len(installOrder) + 1
	}
	for i, k := range installOrder {
		if k == m.kind {
			return i
		}
	}
	return len(installOrder)
}

func run() error {
	var files valuesFiles
	flag.Var(&files, "f", "values file laid over the chart's values.yaml (repeatable)")
	name := flag.String("name", "kiln", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	kubeVersion := flag.String("kube-version", "v1.30.0", "Kubernetes version in .Capabilities")
	apis := flag.String("api-versions", "", "extra API versions in .Capabilities, comma-separated")
	skipTests := flag.Bool("skip-tests", false, "leave out test hooks")
	notes := flag.Bool("notes", false, "print the rendered NOTES.txt only")
	flag.Parse()
	if flag.NArg() != 1 {
		return errors.New("usage: helmrender [flags] CHART_DIR")
	}
	dir := flag.Arg(0)

	meta, err := readYAML(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return err
	}
	chart := chartObject(meta)
	chartName, _ := chart["Name"].(string)
	values, err := readYAML(filepath.Join(dir, "values.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		over, err := readYAML(f)
		if err != nil {
			return err
		}
		merge(values, over)
	}
	kv, err := semver.NewVersion(*kubeVersion)
	if err != nil {
		return fmt.Errorf("-kube-version: %v", err)
	}
	if c, ok := chart["KubeVersion"].(string); ok {
		constraint, err := semver.NewConstraint(c)
		if err != nil {
			return fmt.Errorf("Chart.yaml kubeVersion: %v", err)
		}
		if !constraint.Check(kv) {
			return fmt.Errorf("chart requires kubeVersion %s, not %s", c, *kubeVersion)
		}
	}
	versions := apiVersions{"v1", "apps/v1", "rbac.authorization.k8s.io/v1"}
	if *apis != "" {
		versions = append(versions, strings.Split(*apis, ",")...)
	}
	top := map[string]interface{}{
		"Values": values,
		"Chart":  chart,
		"Release": map[string]interface{}{
			"Name": *name, "Namespace": *namespace, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1,
		},
		"Capabilities": map[string]interface{}{
			"KubeVersion": map[string]interface{}{
				"Version": "v" + kv.String(), "GitVersion": "v" + kv.String(),
				"Major": fmt.Sprint(kv.Major()), "Minor": fmt.Sprint(kv.Minor()),
			},
			"APIVersions": versions,
		},
	}

	// Every file under templates/ is parsed into one set, so that any file
	// can include the helpers; names are "<chart>/templates/<path>".
	var names []string
	t := template.New(chartName)
	t.Funcs(funcMap(&t)).Option("missingkey=zero")
	root := filepath.Join(dir, "templates")
	err = filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		n := chartName + "/templates/" + filepath.ToSlash(rel)
		if _, err := t.New(n).Parse(string(text)); err != nil {
			return err
		}
		names = append(names, n)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)

	var out []manifest
	for _, n := range names {
		base := filepath.Base(n)
		isNotes := base == "NOTES.txt"
		if strings.HasPrefix(base, "_") || isNotes != *notes {
			continue
		}
		var buf bytes.Buffer
		top["Template"] = map[string]interface{}{"Name": n, "BasePath": chartName + "/templates"}
		if err := t.ExecuteTemplate(&buf, n, top); err != nil {
			return err
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if isNotes {
			fmt.Print(text)
			return nil
		}
		docs, err := split(n, text)
		if err != nil {
			return err
		}
		out = append(out, docs...)
	}
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	for _, m := range out {
		if m.test && *skipTests {
			continue
		}
		fmt.Printf("---\n# Source: %s\n%s\n", m.source, m.body)
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "helmrender:", err)
		os.Exit(1)
	}
}
