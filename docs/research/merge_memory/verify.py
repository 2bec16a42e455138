import sys
from common import *
N=sys.argv[1]
res={}
for name in ('base','work'):
    d=f'/tmp/memresearch/{name}_{N}'
    c=connect(d, {'enable_external_file_cache': False}) if False else connect(d)
    c.sql("SET enable_external_file_cache=false")
    snaps=[r[0] for r in c.sql("select snapshot_id from lake.snapshots() order by 1").fetchall()]
    vers=[2,3,10,50,100,151,200,250,len(snaps)-2 if name=='base' else None]
    r={'nsnap':len(snaps),'last':snaps[-1],'active_files':nfiles(c),
       'files_on_disk':len(os.listdir(d+'/data/main/t')),
       'sched_del':c.sql("select count(*) from __ducklake_metadata_lake.ducklake_files_scheduled_for_deletion").fetchone()[0]}
    for v in [2,3,10,50,100,151,200,250,300,301]:
        if v<=snaps[-1]:
            r[v]=c.sql(f"select count(*), sum(hash(id,v)), sum(hash(rowid,id)), min(rowid), max(rowid) from lake.main.t AT (VERSION => {v})").fetchone()
    r['cur']=c.sql("select count(*), sum(hash(id,v)), sum(hash(rowid,id)), min(rowid), max(rowid) from lake.main.t").fetchone()
    r['chg']=c.sql("select count(*) from ducklake_table_changes('lake','main','t',20,40)").fetchone()
    res[name]=r
    c.close()
b,w=res['base'],res['work']
for k in b:
    print(k, b[k]==w.get(k), b[k], w.get(k) if b[k]!=w.get(k) else '')
