package placementcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
)

type violationsOptions struct {
	flags          *genericclioptions.ConfigFlags
	streams        genericiooptions.IOStreams
	output         string
	fromFile       string
	leaseNamespace string
	leaseName      string
	port           int
	// The enforcer's endpoint: its URL when it is not a pod (empty: the
	// leader pod, through a port-forward), the CA its certificate must
	// chain to (empty: through the port-forward only, not verified) and
	// the name it must carry.
	enforcerURL string
	caFile      string
	serverName  string
	// build is the plugin's release, whose archives a skew warning names.
	build BuildInfo
}

// The environment that sets --enforcer-url and --enforcer-ca-file (make
// run's enforcer is a process on the host, not a pod).
const (
	enforcerURLEnv = "PLACEMENT_ENFORCER_URL"
	enforcerCAEnv  = "PLACEMENT_ENFORCER_CA_FILE"
)

func newViolations(streams genericiooptions.IOStreams, build BuildInfo) *cobra.Command {
	o := &violationsOptions{flags: genericclioptions.NewConfigFlags(true), streams: streams, build: build}
	cmd := &cobra.Command{
		Use:   "violations [-o table|json] [--from-file REPORT]",
		Short: "Running pods that break the placement rules they opted in to: rule, state, where they could go",
		Long: `Lists what the leading placement-enforcer judged at its last pass: each
violating pod that opted in, its node, the rule it breaks and the term that
decided, its state (grace, no-fit, pdb-blocked, evicting, protected...) and
the node its replacement would be scheduled on.

It reads the leader's /violations over HTTPS with your own credentials, which
the enforcer checks with the apiserver: the ClusterRole
placement-scheduler-enforcer-reader grants it. The enforcer's Lease names the
leader; the command reaches its pod through the apiserver as kubectl
port-forward does. That takes get on the Lease, and get and create on
pods/portforward, in the enforcer's namespace. The enforcer's certificate is
verified with --enforcer-ca-file; without it the port-forward to the named
pod, through the authenticated apiserver, is what vouches for the other end.

--enforcer-url (or $PLACEMENT_ENFORCER_URL) reads an enforcer that is not a
pod, e.g. make run's, and then needs --enforcer-ca-file (or
$PLACEMENT_ENFORCER_CA_FILE). --from-file reads a saved /violations instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var data []byte
			var err error
			if o.fromFile != "" {
				if data, err = os.ReadFile(o.fromFile); err != nil {
					return fmt.Errorf("--from-file: %w", err)
				}
			} else {
				rc, err := o.flags.ToRESTConfig()
				if err != nil {
					return fmt.Errorf("no usable kubeconfig (%v): set --kubeconfig/--context, or use --from-file", err)
				}
				if data, err = o.fetch(cmd.Context(), rc); err != nil {
					return fmt.Errorf("kubectl placement violations: %w", err)
				}
			}
			return o.print(o.streams.Out, data)
		},
	}
	o.flags.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "table or json")
	cmd.Flags().StringVar(&o.fromFile, "from-file", "", "a saved /violations report instead of the live enforcer")
	cmd.Flags().StringVar(&o.leaseNamespace, "lease-namespace", installNamespace, "the enforcer's Lease namespace")
	cmd.Flags().StringVar(&o.leaseName, "lease-name", "placement-scheduler-enforcer", "the enforcer's Lease")
	cmd.Flags().IntVar(&o.port, "port", violationsv1alpha1.DefaultSecurePort, "the enforcer's --secure-port")
	cmd.Flags().StringVar(&o.enforcerURL, "enforcer-url", os.Getenv(enforcerURLEnv),
		"the enforcer's https://host:port when it is not a pod (needs --enforcer-ca-file); empty: the leader pod, through a port-forward (default $"+enforcerURLEnv+")")
	cmd.Flags().StringVar(&o.caFile, "enforcer-ca-file", os.Getenv(enforcerCAEnv),
		"the CA the enforcer's serving certificate must chain to (default $"+enforcerCAEnv+")")
	cmd.Flags().StringVar(&o.serverName, "enforcer-server-name", "",
		"the name the enforcer's certificate must carry, with --enforcer-ca-file (default: the --enforcer-url host, or localhost through a port-forward)")
	return cmd
}

// fetch reads the leading enforcer's /violations with rc's credentials:
// at --enforcer-url, or at the leader pod the Lease names (its holder is
// <pod>_<uuid>), through a port-forward.
func (o *violationsOptions) fetch(ctx context.Context, rc *rest.Config) ([]byte, error) {
	if o.enforcerURL != "" {
		if o.caFile == "" {
			return nil, fmt.Errorf("--enforcer-url %s needs --enforcer-ca-file (or $%s): nothing else vouches for the enforcer's certificate", o.enforcerURL, enforcerCAEnv)
		}
		return o.get(ctx, rc, o.enforcerURL)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	pod, err := o.leader(ctx, client)
	if err != nil {
		return nil, err
	}
	// The apiserver answered. (--enforcer-url above reads the enforcer
	// alone: no apiserver to ask.)
	warnSkew(o.streams.ErrOut, client.Discovery(), o.build)
	where := fmt.Sprintf("the leader, pod %s/%s", o.leaseNamespace, pod)
	local, stop, err := forward(ctx, rc, client, o.leaseNamespace, pod, o.port)
	if err != nil {
		return nil, fmt.Errorf("reaching %s, through the apiserver's port-forward (needs get and create on pods/portforward in %s; an enforcer that is not a pod: --enforcer-url): %w", where, o.leaseNamespace, err)
	}
	defer stop()
	data, err := o.get(ctx, rc, "https://"+local)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, where)
	}
	return data, nil
}

// leader is the pod that holds the enforcer's Lease.
func (o *violationsOptions) leader(ctx context.Context, client kubernetes.Interface) (string, error) {
	lease, err := client.CoordinationV1().Leases(o.leaseNamespace).Get(ctx, o.leaseName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("finding the enforcer's leader (Lease %s/%s; --lease-namespace, --lease-name): %w", o.leaseNamespace, o.leaseName, err)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	i := strings.LastIndex(holder, "_")
	if i <= 0 {
		return "", fmt.Errorf("Lease %s/%s has no leader (holder %q): is the enforcer running?", o.leaseNamespace, o.leaseName, holder)
	}
	return holder[:i], nil
}

// get GETs base's /violations with rc's credentials (bearer token, client
// certificate, exec plugin: whatever the kubeconfig holds), which the
// enforcer authenticates and authorizes with the apiserver. A refusal is
// one sentence naming the identity and the grant it lacks.
func (o *violationsOptions) get(ctx context.Context, rc *rest.Config, base string) ([]byte, error) {
	ec := rest.CopyConfig(rc)
	ec.Host, ec.APIPath = base, ""
	// The enforcer's certificate is not the apiserver's: the kubeconfig's
	// CA and server name do not apply.
	ec.TLSClientConfig.CAFile, ec.TLSClientConfig.CAData = o.caFile, nil
	ec.TLSClientConfig.ServerName = o.serverName
	if o.caFile != "" && o.serverName == "" && o.enforcerURL == "" {
		ec.TLSClientConfig.ServerName = "localhost" // the self-signed certificate's name
	}
	ec.TLSClientConfig.Insecure = o.caFile == ""
	httpClient, err := rest.HTTPClientFor(ec)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/violations", nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading /violations of the enforcer at %s: %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading /violations of the enforcer at %s: %w", base, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusUnauthorized:
		return nil, errors.New("unauthorized: the enforcer could not authenticate your credentials with the apiserver (use a token or client certificate the cluster accepts)")
	case http.StatusForbidden:
		return nil, fmt.Errorf("forbidden: %s may not get /violations of the enforcer (grant the ClusterRole placement-scheduler-enforcer-reader)", refused(body))
	}
	return nil, fmt.Errorf("reading /violations of the enforcer at %s: %s: %s", base, resp.Status, strings.Join(strings.Fields(string(body)), " "))
}

// refusedUser finds the user in the Status message of a 403 (forbidden:
// User "jane" cannot get path "/violations").
var refusedUser = regexp.MustCompile(`User "([^"]*)"`)

// refused names who was refused, from a 403's body.
func refused(body []byte) string {
	var status metav1.Status
	if json.Unmarshal(body, &status) == nil {
		if m := refusedUser.FindStringSubmatch(status.Message); m != nil {
			return fmt.Sprintf("user %q", m[1])
		}
	}
	return "you"
}

// forward opens a port-forward, through the apiserver, from a free port of
// 127.0.0.1 to the pod's port, as kubectl port-forward does (WebSockets,
// then SPDY). It returns the local address and what closes it.
func forward(ctx context.Context, rc *rest.Config, client kubernetes.Interface, namespace, pod string, port int) (string, func(), error) {
	u := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(rc)
	if err != nil {
		return "", nil, err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	tunneling, err := portforward.NewSPDYOverWebsocketDialer(u, rc)
	if err != nil {
		return "", nil, err
	}
	dialer = portforward.NewFallbackDialer(tunneling, dialer, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	stopCh, ready := make(chan struct{}), make(chan struct{})
	var errOut strings.Builder
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stopCh, ready, io.Discard, &errOut)
	if err != nil {
		return "", nil, err
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	stop := func() { close(stopCh); <-done }
	select {
	case <-ready:
	case err := <-done:
		if err == nil {
			err = errors.New(strings.TrimSpace(errOut.String()))
		}
		return "", nil, err
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		stop()
		return "", nil, fmt.Errorf("no local port: %v", err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local), stop, nil
}

// print writes the report as a table or as JSON.
func (o *violationsOptions) print(w io.Writer, data []byte) error {
	var reports []violationsv1alpha1.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		return fmt.Errorf("not an enforcer /violations report: %w", err)
	}
	switch o.output {
	case "json":
		if reports == nil {
			reports = []violationsv1alpha1.Report{} // nothing to report is [], never null
		}
		out, err := json.MarshalIndent(reports, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(out))
		return err
	case "table", "":
	default:
		return fmt.Errorf("-o %q: want table or json", o.output)
	}
	if len(reports) == 0 {
		_, err := fmt.Fprintln(w, "No pod violates a placement rule it opted in to.")
		return err
	}
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "POD\tNODE\tRULE\tSTATE\tCOULD GO TO\tWHY")
	for _, r := range reports {
		target := r.Target
		if target == "" {
			target = "-"
		}
		why := r.Reason
		if len(r.Terms) > 0 {
			why = strings.Join(r.Terms, "; ")
		}
		if r.Detail != "" {
			// A refusal's detail is the server's sentence ("... disruption
			// budget."): its full stop would end up before the colon.
			why = strings.TrimRight(r.Detail, ". ") + ": " + why
		}
		rule := string(r.Rule)
		if rule == "" {
			rule = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Pod, r.Node, rule, r.State, target, why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if line := split(reports); line != "" {
		_, err := fmt.Fprintln(w, line)
		return err
	}
	return nil
}

// split sums up the pass: how many pods go now (evicting, or dry-run in a
// dry run) and how many are due but wait, by what holds them ("" when
// neither).
func split(reports []violationsv1alpha1.Report) string {
	now, waiting := 0, 0
	by := map[string]int{}
	for _, r := range reports {
		switch {
		case r.State == violationsv1alpha1.StateEvicting || r.State == violationsv1alpha1.StateDryRun:
			now++
		case r.Wait != "":
			waiting++
			by[r.Wait]++
		}
	}
	if now == 0 && waiting == 0 {
		return ""
	}
	line := fmt.Sprintf("Going now: %d. Waiting: %d", now, waiting)
	if waiting > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(by)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, by[k]))
		}
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	return line + "."
}
