"""The report page's inline style sheet and scripts, and the Content-Security-Policy that forbids any
network load (the page works without its scripts: they add filtering and expand/collapse)."""

CSS = """
:root{--ink:#1f2328;--muted:#59636e;--line:#d8dee4;--bg:#f6f7f9;--card:#fff;
--ack:#0072B2;--ack-bg:#dcebf6;--tool:#9a6700;--tool-bar:#E69F00;--tool-bg:#fdf0cf;--outcome:#00795a;
--outcome-bg:#d4f0e6;--shift:#6b5d00;--shift-bg:#fbf4b8;--err:#b34700;--err-bg:#fde6d8;--user:#0072B2;
--assistant:#009E73;--toolmsg:#8c959f;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
*{box-sizing:border-box}
html{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--ink);
background:var(--bg);font-size:15px;line-height:1.45}
body{margin:0}
.wrap{max-width:1240px;margin:0 auto;padding:0 24px}
header.top{background:#1f2937;color:#f3f4f6;padding:20px 0 16px}
header.top h1{margin:0;font-size:24px;font-weight:650;letter-spacing:.2px}
header.top .subtitle{margin-top:4px;color:#cbd5e1;font-size:14px}
header.top nav{margin-top:10px;display:flex;gap:16px;font-size:14px}
header.top nav a{color:#93c5fd;text-decoration:none}
header.top nav a:hover{text-decoration:underline}
section{margin:28px 0}
h2{font-size:19px;margin:0 0 12px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:0 0 6px;text-transform:uppercase;letter-spacing:.5px;color:var(--muted);font-weight:600}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:14px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 16px}
.card .big{font-size:30px;font-weight:650;line-height:1.1;font-variant-numeric:tabular-nums}
.card .big small{font-size:14px;font-weight:500;color:var(--muted);margin-left:6px}
.card .sub{color:var(--muted);font-size:13px;margin:2px 0 8px}
.card dl{display:grid;grid-template-columns:auto 1fr;gap:2px 12px;margin:0;font-size:13.5px}
.card dt{color:var(--muted)}
.card dd{margin:0;text-align:right;font-variant-numeric:tabular-nums}
.card table{width:100%;font-size:13.5px}
.card table.data th,.card table.data td{padding:3px 5px;white-space:normal}
.card table.data th:first-child,.card table.data td:first-child{padding-left:0}
.card table.data th:last-child,.card table.data td:last-child{padding-right:0}
table.data.wraps th,table.data.wraps td{white-space:normal}
.ci,table.data td small{white-space:nowrap}
.notes{margin:12px 0 0;padding:10px 14px;background:#fff8e1;border:1px solid #f0d98c;border-radius:8px;
font-size:13.5px}
.notes ul{margin:4px 0 0;padding-left:20px}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:14px}
figure{margin:0;background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 12px 10px}
figure svg{width:100%;height:auto;display:block;max-width:760px;margin:0 auto}
figure.wide svg{max-width:1400px}
figure.wide{grid-column:1/-1}
figcaption{font-size:13px;color:var(--muted);margin-top:6px}
table.data{border-collapse:collapse;width:100%;background:var(--card);font-size:13.5px;
font-variant-numeric:tabular-nums}
table.data th,table.data td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
table.data th:first-child,table.data td:first-child{text-align:left}
table.data thead th{background:#eef1f4;font-weight:600;color:#353c44}
.tables{display:grid;gap:18px}
.tables h3{margin-bottom:4px}
.tables>*{min-width:0}
.scroll{overflow-x:auto;border:1px solid var(--line);border-radius:8px}
.scroll table.data tr:last-child td{border-bottom:0}
.controls{display:none;gap:10px;align-items:center;flex-wrap:wrap;margin-bottom:10px}
html.js .controls{display:flex}
.controls input,.controls select,.controls button{font:inherit;font-size:14px;padding:5px 9px;
border:1px solid #b7c0ca;border-radius:6px;background:#fff;color:var(--ink)}
.controls input{min-width:340px}
.controls button{cursor:pointer}
.controls button:hover{background:#eef1f4}
.controls .count{color:var(--muted);font-size:13.5px}
.legend-line{font-size:13px;color:var(--muted);margin:0 0 10px}
details.sim{background:var(--card);border:1px solid var(--line);border-radius:8px;margin-bottom:6px}
details.sim[hidden]{display:none}
details.sim>summary{list-style:none;cursor:pointer;padding:8px 12px;display:grid;
grid-template-columns:16px 74px minmax(150px,190px) minmax(80px,110px) 1fr auto;gap:10px;align-items:center}
details.sim>summary::-webkit-details-marker{display:none}
details.sim>summary::before{content:"\\25B8";color:var(--muted);transition:transform .1s}
details.sim[open]>summary::before{transform:rotate(90deg)}
details.sim>summary:hover{background:#f3f5f8}
details.sim[open]>summary{border-bottom:1px solid var(--line)}
.sid{font-family:var(--mono);font-size:13.5px;font-weight:600}
.persona{color:var(--muted);font-size:13.5px}
.goals{font-size:13.5px}
.chips{display:flex;gap:6px;flex-wrap:wrap;justify-content:flex-end}
.chip{font-size:12px;padding:1px 7px;border-radius:10px;background:#eef1f4;color:#353c44;white-space:nowrap;
font-variant-numeric:tabular-nums}
.chip.bad{background:var(--err-bg);color:var(--err)}
.pill{font-size:12px;font-weight:650;text-align:center;padding:2px 0;border-radius:10px;text-transform:uppercase;
letter-spacing:.4px}
.pill.pass{background:#d4f0e6;color:#00664c}
.pill.fail{background:var(--err-bg);color:var(--err)}
.pill.unscored,.pill.na{background:#eceff2;color:var(--muted)}
.sim-body{padding:10px 14px 14px}
.sim-body table.data{margin-bottom:12px}
.conv{list-style:none;margin:0;padding:0;display:flex;flex-direction:column;gap:8px}
.msg{border:1px solid var(--line);border-left:4px solid var(--toolmsg);border-radius:6px;padding:7px 10px;
background:#fff}
.msg.user{border-left-color:var(--user);background:#f5f9fd}
.msg.assistant{border-left-color:var(--assistant)}
.msg.tool{background:#fafbfc;margin-left:28px}
.msg.shift{background:var(--shift-bg);border-color:#d9c94a;border-left-color:#b8a200}
.msg.staged{box-shadow:0 0 0 2px #c9d8e6}
.msg.error{background:var(--err-bg);border-color:#f0b799;border-left-color:var(--err)}
.meta{display:flex;gap:8px;align-items:center;flex-wrap:wrap;font-size:12.5px;color:var(--muted);margin-bottom:3px}
.role{font-weight:700;text-transform:uppercase;letter-spacing:.5px;font-size:11.5px;color:var(--ink)}
.idx{font-family:var(--mono)}
.rel{font-family:var(--mono);color:#7a8591}
.text{white-space:pre-wrap;word-break:break-word}
.badge{display:inline-block;font-size:12px;font-weight:650;padding:1px 8px;border-radius:10px;border:1px solid}
.badge.shift{background:#f0e442;color:#3d3500;border-color:#b8a200}
.badge.ack{background:var(--ack-bg);color:var(--ack);border-color:#8fbfe0}
.badge.tool{background:var(--tool-bg);color:var(--tool);border-color:#e7c26b}
.badge.outcome{background:var(--outcome-bg);color:var(--outcome);border-color:#87d1b8}
.badge.err{background:var(--err);color:#fff;border-color:var(--err)}
.badge.redundant{background:#f7e1ee;color:#8a2f68;border-color:#dca6c6}
.chip.warn{background:#f7e1ee;color:#8a2f68}
.badge.never{background:#eceff2;color:var(--muted);border-color:#cfd6dd;font-weight:500}
.calls{margin-top:6px;display:flex;flex-direction:column;gap:6px}
.call{border:1px dashed #b7c0ca;border-radius:6px;padding:5px 8px;background:#fbfcfd}
.call.error{border-color:var(--err);background:#fff5ef}
.call code,.msg.tool .meta code{font-family:var(--mono);font-size:13px;font-weight:600;color:var(--ink)}
pre{font-family:var(--mono);font-size:12.5px;margin:4px 0 0;white-space:pre-wrap;word-break:break-word;
max-height:18em;overflow:auto;background:#f3f5f7;border-radius:4px;padding:5px 7px}
.msg.error pre{background:#fff5ef}
pre.inline{display:block;max-height:none}
.end{margin-top:8px;font-size:13px;color:var(--muted)}
footer{margin:36px 0 0;padding:18px 0 30px;border-top:1px solid var(--line);color:var(--muted);font-size:13px}
footer table.data{font-size:12.5px}
footer code,.hash{font-family:var(--mono);font-size:12px;word-break:break-all}
footer p{margin:4px 0}
footer table.data th,footer table.data td{text-align:left}
footer h2{color:var(--ink)}
dl.config{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0 12px}
dl.config dt{color:var(--muted)}
dl.config dd{margin:0;color:var(--ink)}
@media (max-width:900px){details.sim>summary{grid-template-columns:16px 70px 1fr;}
details.sim>summary .goals,details.sim>summary .chips{grid-column:2/-1;justify-content:flex-start}}
"""


HEAD_JS = (
    "document.documentElement.classList.add('js');window.__reportErrors=[];"
    "function __reportError(m){window.__reportErrors.push(String(m));"
    "document.documentElement.setAttribute('data-report-errors',window.__reportErrors.join(' | '));}"
    "window.addEventListener('error',function(ev){__reportError(ev.message||'error');});"
    "document.addEventListener('securitypolicyviolation',function(ev){"
    "__reportError('blocked by CSP: '+ev.violatedDirective+' '+ev.blockedURI);});"
)


BODY_JS = """
(function(){
  var sims=Array.prototype.slice.call(document.querySelectorAll('details.sim'));
  var text=document.getElementById('filter-text'),status=document.getElementById('filter-status');
  var count=document.getElementById('filter-count');
  function apply(){
    var q=text.value.trim().toLowerCase(),s=status.value,shown=0;
    sims.forEach(function(d){
      var ok=(!q||d.getAttribute('data-search').indexOf(q)>=0)&&
        (s==='all'||(s==='errors'?d.getAttribute('data-errors')!=='0':
         s==='shifts'?d.getAttribute('data-shifts')!=='0':d.getAttribute('data-status')===s));
      d.hidden=!ok;if(ok){shown++;}
    });
    count.textContent=shown+' of '+sims.length+' simulations shown';
  }
  function openHash(){
    var id=decodeURIComponent(location.hash.slice(1)),el=id&&document.getElementById(id);
    if(el&&el.tagName==='DETAILS'){el.hidden=false;el.open=true;}
  }
  text.addEventListener('input',apply);status.addEventListener('change',apply);
  document.getElementById('expand-all').addEventListener('click',function(){
    sims.forEach(function(d){if(!d.hidden){d.open=true;}});});
  document.getElementById('collapse-all').addEventListener('click',function(){
    sims.forEach(function(d){d.open=false;});});
  window.addEventListener('hashchange',openHash);
  apply();openHash();
  document.documentElement.setAttribute('data-report-ready','1');
})();
"""


CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
       "font-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'")
