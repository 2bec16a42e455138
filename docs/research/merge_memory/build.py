import sys, time
from common import *
lakedir=sys.argv[1]; nfiles_target=int(sys.argv[2])
os.makedirs(lakedir+'/data', exist_ok=True)
t=time.time()
c=connect(lakedir)
c.sql("CALL lake.set_option('data_inlining_row_limit', 0)")
c.sql("CREATE TABLE lake.main.t(id BIGINT, v VARCHAR)")
n=0
per_tx=100
while n<nfiles_target:
    c.sql("BEGIN")
    for i in range(per_tx):
        base=n*10
        c.sql(f"INSERT INTO lake.main.t SELECT i, 'val_'||i::VARCHAR||repeat('x', (i%7)*3) FROM range({base},{base+10}) r(i)")
        n+=1
    c.sql("COMMIT")
print('built', n, 'inserts in', time.time()-t, 's; files', nfiles(c))
print(c.sql("select snapshot_id from lake.snapshots() order by 1").fetchall()[-3:])
