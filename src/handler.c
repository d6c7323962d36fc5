/*
 * handler.c - the access method handler, _PG_init, reloptions, operator
 * class validation, and what identifies a gpuidx index
 * (gpuidx_open_checked).  The index cost estimate is in scan.c.
 */
#include "gpuidx.h"
#include "service.h"

#include "access/amvalidate.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

PG_MODULE_MAGIC;

static relopt_kind gpuidx_relopt_kind;

/* Accept only the structures gpuidx knows. */
static void
validate_structure(const char *value)
{
	if (value == NULL)
		return;
	if (strcmp(value, "btree") != 0 && strcmp(value, "veb") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for gpuidx option \"structure\": \"%s\"", value),
				 errdetail("Valid values are \"btree\" and \"veb\".")));
}

/*
 * Register the GUCs (guc.c), the custom scan and the reloption kind; no
 * CUDA here (may be the postmaster).
 */
void
_PG_init(void)
{
	gpuidx_define_gucs();
	MarkGUCPrefixReserved("gpuidx");
	gpuidx_service_register();
	if (process_shared_preload_libraries_in_progress && gpuidx_service_setting)
		gpuidx_shared_register_cleanup();
	gpuidx_customscan_init();
	gpuidx_customjoin_init();
	gpuidx_customagg_init();

	gpuidx_relopt_kind = add_reloption_kind();
	add_string_reloption(gpuidx_relopt_kind, "structure",
						 "Index structure: btree or veb",
						 NULL, validate_structure, AccessExclusiveLock);
}

/* Parse the reloptions of a gpuidx index. */
bytea *
gpuidx_options(Datum reloptions, bool validate)
{
	static const relopt_parse_elt tab[] = {
		{"structure", RELOPT_TYPE_STRING, offsetof(GpuidxOptions, structure_offset)}
	};

	return (bytea *) build_reloptions(reloptions, validate, gpuidx_relopt_kind,
									  sizeof(GpuidxOptions), tab, lengthof(tab));
}

/* Is this relation a gpuidx index? */
bool
gpuidx_is_gpuidx_index(Relation index)
{
	return index->rd_rel->relkind == RELKIND_INDEX &&
		index->rd_indam != NULL &&
		index->rd_indam->ambuild == gpuidx_build;
}

/*
 * A partitioned index has no pages of its own: say so, and name what to call
 * instead (the index of each partition).
 */
static void
reject_partitioned_index(Oid indexoid)
{
	List	   *leaves = find_all_inheritors(indexoid, AccessShareLock, NULL);
	StringInfoData names;
	ListCell   *lc;
	int			shown = 0;

	initStringInfo(&names);
	foreach(lc, leaves)
	{
		Oid			leaf = lfirst_oid(lc);

		if (get_rel_relkind(leaf) != RELKIND_INDEX)
			continue;
		if (shown == 3)
		{
			appendStringInfoString(&names, ", ...");
			break;
		}
		appendStringInfo(&names, "%s%s", shown > 0 ? ", " : "",
						 quote_identifier(get_rel_name(leaf)));
		shown++;
	}
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("\"%s\" is a partitioned index", get_rel_name(indexoid)),
			 errdetail("A partitioned index has no entries of its own; the index of each partition holds them."),
			 shown > 0 ?
			 errhint("Call the function on the partitions' indexes (%s); "
					 "SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = '%s'::regclass lists them.",
					 names.data, get_rel_name(indexoid)) :
			 errhint("The partitioned table has no partitions yet.")));
}

/* The index named by OID does not exist (any more). */
static void
index_gone(Oid indexoid)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_TABLE),
			 errmsg("relation with OID %u does not exist", indexoid)));
}

/*
 * Open a gpuidx index named by OID and its table (AccessShareLock), after
 * checking that it is one and that the user may SELECT from the table.
 */
Relation
gpuidx_open_checked(Oid indexoid, Relation *heap)
{
	Oid			heapoid;
	char		relkind = get_rel_relkind(indexoid);
	AclResult	aclresult;
	Relation	index;

	if (relkind == '\0')
		index_gone(indexoid);
	if (relkind != RELKIND_INDEX && relkind != RELKIND_PARTITIONED_INDEX)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an index", get_rel_name(indexoid))));
	heapoid = IndexGetRelation(indexoid, true);
	if (!OidIsValid(heapoid))
		index_gone(indexoid);
	aclresult = pg_class_aclcheck(heapoid, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, get_relkind_objtype(get_rel_relkind(heapoid)),
					   get_rel_name(heapoid));

	/* Dropped meanwhile (say by REINDEX CONCURRENTLY): an error, not a crash. */
	*heap = table_open(heapoid, AccessShareLock);
	index = try_relation_open(indexoid, AccessShareLock);
	if (index == NULL)
		index_gone(indexoid);
	if (relkind == RELKIND_PARTITIONED_INDEX && index->rd_indam->ambuild == gpuidx_build)
		reject_partitioned_index(indexoid);
	if (!gpuidx_is_gpuidx_index(index))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a gpuidx index",
						RelationGetRelationName(index))));

	/*
	 * An invalid index (a failed or unfinished CREATE INDEX CONCURRENTLY or
	 * REINDEX CONCURRENTLY) may have no pages at all, or lack entries.
	 */
	if (!index->rd_index->indisvalid)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("gpuidx index \"%s\" is not valid",
						RelationGetRelationName(index)),
				 errdetail("A failed or unfinished CREATE INDEX CONCURRENTLY or REINDEX CONCURRENTLY left it without all its entries."),
				 errhint("REINDEX INDEX %s rebuilds it.",
						 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(index)),
													RelationGetRelationName(index)))));
	return index;
}

/* Names of the CREATE INDEX phases, for pg_stat_progress_create_index. */
static char *
gpuidx_buildphasename(int64 phasenum)
{
	switch (phasenum)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case GPUIDX_PHASE_SCAN_TABLE:
			return "scanning table";
		case GPUIDX_PHASE_SORT:
			return "sorting entries";
		case GPUIDX_PHASE_WRITE_BASE:
			return "writing base run";
		default:
			return NULL;
	}
}

/* Check an operator class: strategies 1..5 on integer types, no support functions. */
bool
gpuidx_validate(Oid opclassoid)
{
	bool		result = true;
	HeapTuple	classtup;
	Form_pg_opclass classform;
	Oid			opfamilyoid;
	char	   *opclassname;
	CatCList   *oprlist;
	CatCList   *proclist;
	int			i;

	classtup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	if (!HeapTupleIsValid(classtup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	classform = (Form_pg_opclass) GETSTRUCT(classtup);
	opfamilyoid = classform->opcfamily;
	opclassname = NameStr(classform->opcname);

	if (gpuidx_key_bytes_for_type(classform->opcintype) == 0)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("gpuidx operator class \"%s\" indexes an unsupported type %s",
						opclassname, format_type_be(classform->opcintype))));
		result = false;
	}

	oprlist = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(opfamilyoid));
	for (i = 0; i < oprlist->n_members; i++)
	{
		Form_pg_amop oprform = (Form_pg_amop) GETSTRUCT(&oprlist->members[i]->tuple);

		if (oprform->amopstrategy < 1 || oprform->amopstrategy > 5 ||
			oprform->amoppurpose != AMOP_SEARCH ||
			gpuidx_key_bytes_for_type(oprform->amoplefttype) == 0 ||
			gpuidx_key_bytes_for_type(oprform->amoprighttype) == 0)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("gpuidx operator family contains invalid operator %s with strategy %d",
							format_operator(oprform->amopopr),
							oprform->amopstrategy)));
			result = false;
		}
	}
	ReleaseCatCacheList(oprlist);

	proclist = SearchSysCacheList1(AMPROCNUM, ObjectIdGetDatum(opfamilyoid));
	if (proclist->n_members > 0)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("gpuidx operator family has support functions; it needs none")));
		result = false;
	}
	ReleaseCatCacheList(proclist);

	ReleaseSysCache(classtup);
	return result;
}

/*
 * Index-only scans: the image holds the key itself (not on a standby, where
 * the visibility map may be newer than a scan's image: cache.c).
 */
static bool
gpuidx_canreturn(Relation index, int attno)
{
	/* The key and every included column (all of types the image holds). */
	return attno >= 1 && attno <= RelationGetDescr(index)->natts &&
		gpuidx_can_skip_heap();
}

PG_FUNCTION_INFO_V1(gpuidx_handler);

/* The access method handler: what gpuidx can do and its callbacks. */
Datum
gpuidx_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	amroutine->amstrategies = 5;
	amroutine->amsupport = 0;
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = true;
	amroutine->amcanorderbyop = false;
	amroutine->amcanbackward = true;
	amroutine->amcanunique = false;
	amroutine->amcanmulticol = false;
	amroutine->amoptionalkey = true;
	amroutine->amsearcharray = true;
	amroutine->amsearchnulls = true;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = true;	/* types checked by gpuidx_layout */
	amroutine->amusemaintenanceworkmem = false;
	amroutine->amparallelvacuumoptions = VACUUM_OPTION_NO_PARALLEL;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = gpuidx_build;
	amroutine->ambuildempty = gpuidx_buildempty;
	amroutine->aminsert = gpuidx_insert;
	amroutine->ambulkdelete = gpuidx_bulkdelete;
	amroutine->amvacuumcleanup = gpuidx_vacuumcleanup;
	amroutine->amcanreturn = gpuidx_canreturn;
	amroutine->amcostestimate = gpuidx_costestimate;
	amroutine->amoptions = gpuidx_options;
	amroutine->amproperty = NULL;
	amroutine->ambuildphasename = gpuidx_buildphasename;
	amroutine->amvalidate = gpuidx_validate;
	amroutine->amadjustmembers = NULL;
	amroutine->ambeginscan = gpuidx_beginscan;
	amroutine->amrescan = gpuidx_rescan;
	amroutine->amgettuple = gpuidx_gettuple;
	amroutine->amgetbitmap = gpuidx_getbitmap;
	amroutine->amendscan = gpuidx_endscan;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;

	PG_RETURN_POINTER(amroutine);
}
