import sys,re,statistics as st
d={}
for l in open(sys.argv[1]):
    v=l.split()[0]; ms=float(re.search(r' ([\d.]+)ms',l).group(1))
    msgs=[int(x) for x in re.findall(r'msgs=(\d+)',l)]
    imb = min(msgs)/max(msgs) < 0.6 if msgs and max(msgs)>0 else False
    p=re.search(r'persist=(\d+)',l); p=int(p.group(1)) if p else 0
    d.setdefault(v,[]).append((ms,imb,p))
for v,xs in sorted(d.items()):
    ms=[x[0] for x in xs]
    print(v, "n=%d median=%.1f p25=%.1f p75=%.1f imbalanced=%d persist/run=%.1f" % (len(xs), st.median(ms), st.quantiles(ms,n=4)[0], st.quantiles(ms,n=4)[2], sum(x[1] for x in xs), st.mean(x[2] for x in xs)))
