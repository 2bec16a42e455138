import duckdb, resource, time, os, sys, json
CFG={'extension_directory': '/work/main/.duckdb/extensions', 'autoinstall_known_extensions': 'false', 'allow_unsigned_extensions': 'true'}
def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024
def cur_rss_mb():
    with open('/proc/self/status') as f:
        for l in f:
            if l.startswith('VmRSS'): return int(l.split()[1])/1024
def connect(lakedir, extra_cfg=None):
    cfg=dict(CFG)
    if extra_cfg: cfg.update(extra_cfg)
    c=duckdb.connect(config=cfg)
    c.sql('LOAD ducklake; LOAD sqlite_scanner;')
    c.sql(f"ATTACH 'ducklake:sqlite:{lakedir}/cat.sqlite' AS lake (DATA_PATH '{lakedir}/data/', META_JOURNAL_MODE 'WAL', OVERRIDE_DATA_PATH true)")
    return c
def nfiles(c):
    return c.sql("select count(*) from __ducklake_metadata_lake.ducklake_data_file where end_snapshot is null").fetchone()[0]
def checks(c, k):
    r={}
    r['cur']=c.sql("select count(*), sum(hash(id,v)), sum(hash(rowid,id)) from lake.main.t").fetchone()
    r['old']=c.sql(f"select count(*), sum(hash(id,v)), sum(hash(rowid,id)) from lake.main.t AT (VERSION => {k})").fetchone()
    return r
