# exact recipe: python recipe.py N [K] ; fresh copy, threads=1, cache off, stage1 + stage2
import sys, time, subprocess, shutil
from common import *
N=sys.argv[1]; K=int(sys.argv[2]) if len(sys.argv)>2 else 5000
S0=1<<20; FINAL='512MB'
base=f'/tmp/memresearch/base_{N}'; work=f'/tmp/memresearch/work_{N}'
shutil.rmtree(work, ignore_errors=True); subprocess.check_call(['cp','-a',base,work])
c=connect(work); c.sql("SET threads=1"); c.sql("SET enable_external_file_cache=false")
t0=time.time()
n,avg=c.sql(f"SELECT count(*), avg(data_file_size_bytes) FROM ducklake_list_files('lake','t', schema=>'main') WHERE data_file_size_bytes < {S0}").fetchone()
T1=int(K*avg); S=max(min(S0, T1//16), int(2*avg)+1)
calls=[]
def loop(extra, guard):
    for _ in range(guard):
        ts=time.time()
        r=c.sql(f"CALL ducklake_merge_adjacent_files('lake','t', schema=>'main', max_compacted_files=>1{extra})").fetchall()
        p=sum(x[2] for x in r); calls.append((p, round(time.time()-ts,2), round(rss_mb())))
        if p==0: return
c.sql(f"SET SESSION ducklake_target_file_size='{T1}B'")
loop(f", max_file_size=>{S}", -(-n//(K//2))+5)
c.sql(f"SET SESSION ducklake_target_file_size='{FINAL}'")
loop("", 1000)
T=time.time()-t0
print(json.dumps({'N':N,'K':K,'avg':round(avg),'T1':T1,'S':S,'calls':len(calls),'t':round(T,2),'rss':round(rss_mb()),'files_after':nfiles(c),'detail':calls}))
