package reliability

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// tcpProxy forwards TCP connections from a local port to target, in this
// process, so a test can cut the network between a client (the scheduler,
// pointed at the proxy) and the apiserver while both keep running. TLS goes
// through untouched: the apiserver's certificate is for 127.0.0.1, which
// the proxy listens on too.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startProxy listens on a free 127.0.0.1 port until the test ends.
func startProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// Addr is the address clients dial instead of target.
func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

// forward pipes c to a new connection to target both ways, unless the
// network is cut: then c is closed at once, as a firewall rejecting it.
func (p *tcpProxy) forward(c net.Conn) {
	defer p.wg.Done()
	p.mu.Lock()
	down := p.down
	p.mu.Unlock()
	if down {
		_ = c.Close()
		return
	}
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, u) {
		return
	}
	var pipes sync.WaitGroup
	pipes.Add(2)
	pipe := func(dst, src net.Conn) {
		defer pipes.Done()
		_, _ = io.Copy(dst, src)
		// One side finished: end both, as a connection ends.
		_ = dst.Close()
		_ = src.Close()
	}
	go pipe(u, c)
	go pipe(c, u)
	pipes.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

// track registers both halves of a connection for cut, unless the network
// was cut meanwhile (then it closes them and returns false).
func (p *tcpProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// cut drops every open connection and refuses new ones until heal.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// heal lets connections through again.
func (p *tcpProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

func (p *tcpProxy) close() {
	_ = p.ln.Close()
	p.cut()
	p.wg.Wait()
}
